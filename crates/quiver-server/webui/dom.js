// Small DOM building blocks shared by every page: element creation, dialogs, notices.

/** h('div', {class: 'x', onclick: fn}, child, 'text', [more]) builds an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'style' && typeof value === 'object') {
      Object.assign(el.style, value);
    } else if (name === 'value') {
      el.value = value;
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces the children of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A short notice in the corner; errors stay longer. */
export function notify(message, kind = 'info') {
  let box = document.getElementById('notices');
  if (!box) {
    box = h('div', { id: 'notices' });
    document.body.append(box);
  }
  const note = h('div', { class: `notice ${kind}`, role: 'status' }, message);
  box.append(note);
  setTimeout(() => note.remove(), kind === 'error' ? 8000 : 3000);
}

/** A modal dialog; resolves with the pressed button's value (null when cancelled). */
export function dialog(title, body, buttons = [{ label: 'OK', value: true, primary: true }]) {
  return new Promise((resolve) => {
    const close = (value) => { overlay.remove(); resolve(value); };
    const actions = buttons.map((b) => h('button', {
      class: b.primary ? 'primary' : (b.danger ? 'danger' : ''),
      'data-action': b.value,
      onclick: async () => {
        if (b.check && !(await b.check())) return;
        close(b.value);
      },
    }, b.label));
    actions.unshift(h('button', { onclick: () => close(null) }, 'Cancel'));
    const overlay = h('div', { class: 'overlay', onkeydown: (e) => { if (e.key === 'Escape') close(null); } },
      h('div', { class: 'dialog', role: 'dialog' },
        h('h2', {}, title), h('div', { class: 'dialog-body' }, body), h('div', { class: 'actions' }, actions)));
    document.body.append(overlay);
    const first = overlay.querySelector('input, textarea, select');
    if (first) first.focus();
  });
}

/** Asks before something destructive. */
export function confirmAction(text) {
  return dialog('Please confirm', h('p', {}, text), [{ label: 'Yes', value: true, danger: true }]);
}

/** A labelled form field. */
export function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', {}, label), input, hint ? h('small', {}, hint) : null);
}

/** Bytes as B/KiB/MiB/GiB. */
export function formatBytes(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** Triggers a download of `text` as a file. */
export function download(name, text, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A table from rows of objects; `columns` are [label, row => cell]. */
export function table(columns, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, columns.map(([label]) => h('th', {}, label)))),
    h('tbody', {}, rows.map((row) => h('tr', {}, columns.map(([, cell]) => h('td', {}, cell(row)))))));
}
