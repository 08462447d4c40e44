// The AQL editor: a textarea under a highlighted copy of its text, with completion of
// keywords, functions, collections and bind parameters.
//
// Hand-written rather than a code editor library: AQL is QuiverDB's own query language, the
// tokenizer below is all the highlighting needs, and a general editor would add hundreds of
// kilobytes of JavaScript plus a build step to an interface that has none.

import { h } from './dom.js';

export const KEYWORDS = [
  'FOR', 'IN', 'RETURN', 'FILTER', 'SORT', 'LIMIT', 'LET', 'COLLECT', 'INTO', 'KEEP', 'WITH',
  'COUNT', 'AGGREGATE', 'INSERT', 'UPDATE', 'REPLACE', 'REMOVE', 'UPSERT', 'OPTIONS', 'SEARCH',
  'WINDOW', 'PRUNE', 'GRAPH', 'OUTBOUND', 'INBOUND', 'ANY', 'ALL', 'NONE', 'AT', 'LEAST',
  'SHORTEST_PATH', 'K_SHORTEST_PATHS', 'K_PATHS', 'ALL_SHORTEST_PATHS', 'DISTINCT', 'ASC',
  'DESC', 'NOT', 'AND', 'OR', 'LIKE', 'TRUE', 'FALSE', 'NULL', 'NEW', 'OLD', 'CURRENT', 'TO',
];

export const FUNCTIONS = 'ABS ACOS ANALYZER APPEND APPLY APPROX_NEAR_COSINE APPROX_NEAR_INNER_PRODUCT APPROX_NEAR_L2 ASIN ASSERT ATAN ATAN2 ATTRIBUTES AVERAGE AVG BIT_AND BIT_CONSTRUCT BIT_DECONSTRUCT BIT_FROM_STRING BIT_NEGATE BIT_OR BIT_POPCOUNT BIT_SHIFT_LEFT BIT_SHIFT_RIGHT BIT_TEST BIT_TO_STRING BIT_XOR BM25 BOOST CALL CEIL CHAR_LENGTH CHECK_DOCUMENT COLLECTIONS COLLECTION_COUNT CONCAT CONCAT_SEPARATOR CONTAINS CONTAINS_ARRAY COS COSINE_SIMILARITY COUNT COUNT_DISTINCT COUNT_UNIQUE CRC32 CURRENT_DATABASE CURRENT_USER DATE_ADD DATE_COMPARE DATE_DAY DATE_DAYOFWEEK DATE_DAYOFYEAR DATE_DAYS_IN_MONTH DATE_DIFF DATE_FORMAT DATE_HOUR DATE_ISO8601 DATE_ISOWEEK DATE_ISOWEEKYEAR DATE_LEAPYEAR DATE_LOCALTOUTC DATE_MILLISECOND DATE_MINUTE DATE_MONTH DATE_NOW DATE_QUARTER DATE_ROUND DATE_SECOND DATE_SUBTRACT DATE_TIMESTAMP DATE_TIMEZONE DATE_TIMEZONES DATE_TRUNC DATE_UTCTOLOCAL DATE_YEAR DECAY_EXP DECAY_GAUSS DECAY_LINEAR DECODE_REV DEGREES DISTANCE DOCUMENT ENCODE_URI_COMPONENT ENTRIES EXISTS EXP EXP2 FAIL FIND_FIRST FIND_LAST FIRST FIRST_DOCUMENT FIRST_LIST FLATTEN FLOOR FNV64 FULLTEXT GEO_AREA GEO_CONTAINS GEO_DISTANCE GEO_EQUALS GEO_INTERSECTS GEO_IN_RANGE GEO_LINESTRING GEO_MULTILINESTRING GEO_MULTIPOINT GEO_MULTIPOLYGON GEO_POINT GEO_POLYGON HAS HASH INTERLEAVE INTERSECTION IN_RANGE IPV4_FROM_NUMBER IPV4_TO_NUMBER IS_ARRAY IS_BOOL IS_DATESTRING IS_DOCUMENT IS_IN_POLYGON IS_IPV4 IS_KEY IS_LIST IS_NULL IS_NUMBER IS_OBJECT IS_SAME_COLLECTION IS_STRING JACCARD JSON_PARSE JSON_STRINGIFY KEEP KEEP_RECURSIVE KEYS L1_DISTANCE L2_DISTANCE LAST LEFT LENGTH LEVENSHTEIN_DISTANCE LEVENSHTEIN_MATCH LIKE LOG LOG10 LOG2 LOWER LTRIM MATCHES MAX MD5 MEDIAN MERGE MERGE_RECURSIVE MIN MINHASH MINHASH_COUNT MINHASH_ERROR MINHASH_MATCH MINUS MIN_MATCH NEAR NGRAM_MATCH NGRAM_POSITIONAL_SIMILARITY NGRAM_SIMILARITY NOEVAL NOOPT NOT_NULL NTH OFFSET_INFO OUTERSECTION PARSE_COLLECTION PARSE_IDENTIFIER PARSE_KEY PASSTHRU PERCENTILE PHRASE PI POP POSITION POW PRODUCT PUSH RADIANS RAND RANDOM_TOKEN RANGE REGEX_MATCHES REGEX_REPLACE REGEX_SPLIT REGEX_TEST REMOVE_NTH REMOVE_VALUE REMOVE_VALUES REPEAT REPLACE_NTH REVERSE RIGHT ROUND RTRIM SCHEMA_GET SCHEMA_VALIDATE SHA1 SHA256 SHA512 SHARD_ID SHIFT SIN SLEEP SLICE SORTED SORTED_UNIQUE SOUNDEX SPLIT SQRT STARTS_WITH STDDEV STDDEV_POPULATION STDDEV_SAMPLE SUBSTITUTE SUBSTRING SUBSTRING_BYTES SUM TAN TFIDF TOKENS TO_ARRAY TO_BASE64 TO_BOOL TO_CHAR TO_HEX TO_LIST TO_NUMBER TO_STRING TRANSLATE TRIM TYPENAME UNION UNION_DISTINCT UNIQUE UNSET UNSET_RECURSIVE UNSHIFT UPPER UUID V8 VALUE VALUES VARIANCE VARIANCE_POPULATION VARIANCE_SAMPLE VERSION WARN WITHIN WITHIN_RECTANGLE ZIP '.trim().split(' ');

const KEYWORD_SET = new Set(KEYWORDS);
const FUNCTION_SET = new Set(FUNCTIONS);

// One regular expression with a named group per token class; order matters (comments before
// operators, numbers before identifiers).
const TOKEN = new RegExp([
  '(?<comment>//[^\\n]*|/\\*[\\s\\S]*?(?:\\*/|$))',
  '(?<string>"(?:[^"\\\\]|\\\\.)*"?|\'(?:[^\'\\\\]|\\\\.)*\'?)',
  '(?<quoted>`(?:[^`\\\\]|\\\\.)*`?|´(?:[^´\\\\]|\\\\.)*´?)',
  '(?<bind>@@?[A-Za-z0-9_]+)',
  '(?<number>(?:0x[0-9a-fA-F]+|0b[01]+|(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?))',
  '(?<word>[A-Za-z_$][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)',
  '(?<operator>==|!=|<=|>=|=~|!~|&&|\\|\\||\\.\\.|[-+*/%<>=!?:.,()\\[\\]{}])',
  '(?<space>\\s+)',
  '(?<other>.)',
].join('|'), 'gy');

/** Splits AQL into [class, text] tokens; classes match the CSS tok-* rules. */
export function tokenize(text, collections = new Set()) {
  const out = [];
  TOKEN.lastIndex = 0;
  let m;
  while (TOKEN.lastIndex < text.length && (m = TOKEN.exec(text))) {
    const [kind, value] = Object.entries(m.groups).find(([, v]) => v !== undefined);
    let cls = kind;
    if (kind === 'word') {
      const upper = value.toUpperCase();
      const next = text.slice(TOKEN.lastIndex).match(/^\s*\(/);
      if (next && (FUNCTION_SET.has(upper) || value.includes('::'))) cls = 'function';
      else if (KEYWORD_SET.has(upper)) cls = 'keyword';
      else if (collections.has(value)) cls = 'collection';
      else cls = 'name';
    }
    out.push([cls, value]);
  }
  return out;
}

/** The bind parameter names a query uses (without @; @@x is the collection parameter @x). */
export function bindParameters(text) {
  const names = new Set();
  for (const [cls, value] of tokenize(text)) {
    if (cls === 'bind') names.add(value.startsWith('@@') ? value.slice(1) : value.slice(1));
  }
  return [...names];
}

function highlight(pre, text, collections) {
  pre.replaceChildren();
  for (const [cls, value] of tokenize(text, collections)) {
    if (cls === 'space' || cls === 'name' || cls === 'other') pre.append(value);
    else pre.append(h('span', { class: `tok-${cls}` }, value));
  }
  // A trailing newline needs a character after it to take up a line in the <pre>.
  pre.append(' ');
}

/**
 * An editor element; `collections()` answers the names to complete and mark. Ctrl+Enter calls
 * `onRun`. The element has .value (get/set) and .textarea.
 */
export function aqlEditor({ value = '', collections = () => [], onRun = () => {}, onChange = () => {} } = {}) {
  const pre = h('pre', { 'aria-hidden': 'true' });
  const textarea = h('textarea', { spellcheck: 'false', id: 'aql-input', rows: 8 });
  const popup = h('div', { class: 'completion', hidden: true });
  const root = h('div', { class: 'editor' }, pre, textarea, popup);
  let choices = [];
  let selected = 0;

  const refresh = () => {
    highlight(pre, textarea.value, new Set(collections()));
    pre.scrollTop = textarea.scrollTop;
    onChange(textarea.value);
  };

  const wordBefore = () => {
    const upto = textarea.value.slice(0, textarea.selectionStart);
    const m = upto.match(/@?@?[A-Za-z_][A-Za-z0-9_]*$/);
    return m ? m[0] : '';
  };

  const closePopup = () => { popup.hidden = true; choices = []; };

  const showChoices = () => {
    if (document.activeElement !== textarea) return closePopup();
    const word = wordBefore();
    if (word.length < 1) return closePopup();
    const upper = word.toUpperCase();
    const all = [
      ...KEYWORDS.map((k) => [k, 'keyword']),
      ...FUNCTIONS.map((f) => [`${f}(`, 'function']),
      ...collections().map((c) => [c, 'collection']),
    ];
    choices = all.filter(([label]) => label.toUpperCase().startsWith(upper) && label.toUpperCase() !== upper).slice(0, 50);
    if (!choices.length) return closePopup();
    selected = 0;
    popup.replaceChildren(...choices.map(([label, kind], i) => h('div', {
      class: i === selected ? 'selected' : '',
      onmousedown: (e) => { e.preventDefault(); accept(i); },
    }, label, h('small', {}, kind))));
    const lines = textarea.value.slice(0, textarea.selectionStart).split('\n');
    popup.style.top = `${Math.min(lines.length * 19.5 + 8, textarea.clientHeight)}px`;
    popup.style.left = `${Math.min(lines[lines.length - 1].length * 7.8 + 8, textarea.clientWidth - 200)}px`;
    popup.hidden = false;
  };

  const accept = (i) => {
    const word = wordBefore();
    const [label] = choices[i];
    const start = textarea.selectionStart - word.length;
    textarea.setRangeText(label, start, textarea.selectionStart, 'end');
    closePopup();
    refresh();
    textarea.focus();
  };

  textarea.addEventListener('input', () => { refresh(); showChoices(); });
  textarea.addEventListener('scroll', () => { pre.scrollTop = textarea.scrollTop; });
  textarea.addEventListener('blur', () => setTimeout(closePopup, 100));
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); closePopup(); onRun(); return; }
    if (!popup.hidden && choices.length) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        selected = (selected + (e.key === 'ArrowDown' ? 1 : choices.length - 1)) % choices.length;
        [...popup.children].forEach((c, i) => c.classList.toggle('selected', i === selected));
        return;
      }
      if (e.key === 'Tab' || e.key === 'Enter') { e.preventDefault(); accept(selected); return; }
      if (e.key === 'Escape') { closePopup(); return; }
    }
    if (e.key === 'Tab') { e.preventDefault(); textarea.setRangeText('  ', textarea.selectionStart, textarea.selectionEnd, 'end'); refresh(); }
  });

  Object.defineProperty(root, 'value', {
    get: () => textarea.value,
    set: (v) => { textarea.value = v; refresh(); },
  });
  root.textarea = textarea;
  root.refresh = refresh;
  textarea.value = value;
  refresh();
  return root;
}
