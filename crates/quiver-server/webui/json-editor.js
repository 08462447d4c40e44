// A JSON text editor that validates as the user types and reports where the text is broken.

import { h } from './dom.js';

/**
 * Answers an element with .value (text), .parsed() (the value, or throws) and .valid.
 * `check(value)` may add a rule of its own (answers an error text or null).
 */
export function jsonEditor(initial, check = () => null) {
  const textarea = h('textarea', { spellcheck: 'false', class: 'json-input' });
  const status = h('div', { class: 'status' });
  const root = h('div', { class: 'json-editor' }, textarea, status);
  const validate = () => {
    try {
      const value = JSON.parse(textarea.value);
      const problem = check(value);
      root.valid = !problem;
      status.className = problem ? 'status error' : 'status muted';
      status.textContent = problem || 'valid JSON';
    } catch (err) {
      root.valid = false;
      status.className = 'status error';
      status.textContent = err.message;
    }
  };
  textarea.addEventListener('input', validate);
  textarea.value = typeof initial === 'string' ? initial : JSON.stringify(initial, null, 2);
  Object.defineProperty(root, 'value', { get: () => textarea.value, set: (v) => { textarea.value = v; validate(); } });
  root.parsed = () => JSON.parse(textarea.value);
  root.textarea = textarea;
  validate();
  return root;
}

/** The rule of a document body: a JSON object. */
export const mustBeObject = (v) => (v && typeof v === 'object' && !Array.isArray(v) ? null : 'a document is a JSON object');
