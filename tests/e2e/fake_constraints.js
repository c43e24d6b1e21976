/*
 * Response constraints for the fake LanguageModel (fake_language_model.js), which is
 * installed right after this file and reads it from window.__fakeLMConstraints:
 *
 *   schemaProblem(schema, keywords)    why Chrome would refuse a JSON schema (null if it takes it)
 *   validate(value, schema)            does a JSON value satisfy the schema
 *   example(schema, hints)             a value satisfying the schema (hints fill strings)
 *   completeJson(prefix, schema, text) the rest of a reply that begins with `prefix`, or null
 *   compileRegex(regexp)               {complete(prefix) -> rest | null}; throws
 *                                      RegexUnsupported for syntax a constraint engine refuses
 *   KEYWORD_SETS                       the schema keywords each browser profile accepts
 *
 * Chrome decodes under a constraint with llguidance (Chromium's on-device model service
 * links //third_party/rust/llguidance when it enables constraints), so the "chrome" set
 * is llguidance's documented JSON-schema coverage; "strict" takes away anyOf/oneOf/const;
 * "edge" is a guess (Microsoft documents no list) that keeps only plain structure.
 *
 * ajv would validate schemas better, but it compiles validators with `new Function`,
 * which the app page's Content-Security-Policy forbids; the fake needs only the keywords
 * above. Likewise a small NFA stands in for randexp, which cannot check prefixes.
 */
(() => {
  'use strict';

  // ------------------------------------------------------------------ keyword sets

  const ANNOTATIONS = ['$schema', '$id', '$comment', '$anchor', 'title', 'description', 'default',
    'examples', 'deprecated', 'readOnly', 'writeOnly'];
  // Every JSON Schema 2020-12 keyword: a key outside this list is not a schema keyword.
  const ALL_KEYWORDS = new Set([...ANNOTATIONS, 'type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf',
    'not', 'if', 'then', 'else', '$ref', '$defs', 'definitions', '$dynamicRef', '$dynamicAnchor',
    '$vocabulary', 'properties', 'additionalProperties', 'patternProperties', 'propertyNames',
    'required', 'dependentRequired', 'dependentSchemas', 'minProperties', 'maxProperties',
    'unevaluatedProperties', 'items', 'prefixItems', 'contains', 'minContains', 'maxContains',
    'minItems', 'maxItems', 'uniqueItems', 'unevaluatedItems', 'minLength', 'maxLength', 'pattern',
    'format', 'contentEncoding', 'contentMediaType', 'contentSchema', 'minimum', 'maximum',
    'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']);
  const CHROME = [...ANNOTATIONS, 'type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref', '$defs',
    'definitions', 'properties', 'additionalProperties', 'patternProperties', 'required',
    'minProperties', 'maxProperties', 'items', 'prefixItems', 'minItems', 'maxItems', 'minLength',
    'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
    'multipleOf'];
  const KEYWORD_SETS = {
    chrome: CHROME,
    strict: CHROME.filter((k) => !['anyOf', 'oneOf', 'const'].includes(k)),
    edge: [...ANNOTATIONS, 'type', 'enum', 'properties', 'required', 'additionalProperties', 'items',
      'minItems', 'maxItems', 'minLength', 'maxLength', 'minimum', 'maximum'],
  };
  // llguidance's string formats; any other "format" is refused, as it refuses it.
  const FORMATS = ['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6',
    'uuid', 'uri'];
  const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'integer', 'string'];

  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const isCount = (v) => Number.isInteger(v) && v >= 0;

  function resolveRef(root, ref) {
    if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
    let node = root;
    for (const raw of ref.slice(1).split('/').filter(Boolean)) {
      const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (node === null || typeof node !== 'object' || !(part in node)) return undefined;
      node = node[part];
    }
    return node;
  }

  /** Why the keyword value is malformed, or null. */
  function shapeProblem(key, value, root) {
    switch (key) {
      case 'type': {
        const list = Array.isArray(value) ? value : [value];
        return list.length && list.every((t) => TYPES.includes(t)) ? null : `"type" ${JSON.stringify(value)} is not a JSON type`;
      }
      case 'enum': return Array.isArray(value) ? null : '"enum" must be an array';
      case 'anyOf': case 'oneOf': case 'allOf': case 'prefixItems':
        return Array.isArray(value) && value.length ? null : `"${key}" must be a non-empty array of schemas`;
      case 'properties': case 'patternProperties': case '$defs': case 'definitions':
        return isObject(value) ? null : `"${key}" must be an object of schemas`;
      case 'required':
        return Array.isArray(value) && value.every((v) => typeof v === 'string') ? null : '"required" must list property names';
      case 'minItems': case 'maxItems': case 'minLength': case 'maxLength': case 'minProperties': case 'maxProperties':
        return isCount(value) ? null : `"${key}" must be a non-negative integer`;
      case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum':
        return typeof value === 'number' ? null : `"${key}" must be a number`;
      case 'multipleOf': return typeof value === 'number' && value > 0 ? null : '"multipleOf" must be positive';
      case 'pattern':
        try { compileRegex(new RegExp(value)); return null; } catch (e) { return `"pattern" ${JSON.stringify(value)}: ${e.message}`; }
      case 'format': return FORMATS.includes(value) ? null : `format ${JSON.stringify(value)} is not supported`;
      case '$ref': return resolveRef(root, value) === undefined ? `"$ref" ${JSON.stringify(value)} does not resolve` : null;
      default: return null;
    }
  }

  /**
   * Why a browser accepting `keywords` refuses `schema` (a JSON value, after JSON.parse),
   * or null. Malformed and unsupported schemas are refused alike: Chrome's constraint
   * engine reports both as one NotSupportedError.
   */
  function schemaProblem(schema, keywords, root = schema, path = 'schema') {
    if (typeof schema === 'boolean') return null;
    if (!isObject(schema)) return `${path} is not a JSON schema object`;
    for (const [key, value] of Object.entries(schema)) {
      if (key.startsWith('x-')) continue;
      if (!ALL_KEYWORDS.has(key)) return `${path} has "${key}", which is not a JSON schema keyword`;
      if (!keywords.includes(key)) return `${path} uses "${key}", which this model does not support`;
      const shape = shapeProblem(key, value, root);
      if (shape) return `${path}: ${shape}`;
      const nested = [];
      if (['anyOf', 'oneOf', 'allOf', 'prefixItems'].includes(key)) value.forEach((s, i) => nested.push([s, `${path}.${key}[${i}]`]));
      if (['properties', 'patternProperties', '$defs', 'definitions'].includes(key)) {
        for (const [name, s] of Object.entries(value)) nested.push([s, `${path}.${key}.${name}`]);
      }
      if (key === 'items' || key === 'additionalProperties') nested.push([value, `${path}.${key}`]);
      for (const [sub, where] of nested) {
        const problem = schemaProblem(sub, keywords, root, where);
        if (problem) return problem;
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ validation

  function typeOf(value) {
    if (value === null) return 'null';
    if (Array.isArray(value)) return 'array';
    return typeof value;   // 'boolean' | 'number' | 'string' | 'object'
  }

  function hasType(value, type) {
    if (type === 'integer') return Number.isInteger(value);
    return typeOf(value) === type;
  }

  const deepEqual = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  /** Does `value` satisfy `schema` (the keywords above; formats are not checked). */
  function validate(value, schema, root = schema) {
    if (schema === true || schema === undefined) return true;
    if (schema === false || !isObject(schema)) return false;
    if ('$ref' in schema && !validate(value, resolveRef(root, schema.$ref), root)) return false;
    if ('type' in schema) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (!types.some((t) => hasType(value, t))) return false;
    }
    if ('const' in schema && !deepEqual(value, schema.const)) return false;
    if (Array.isArray(schema.enum) && !schema.enum.some((e) => deepEqual(e, value))) return false;
    if (schema.anyOf && !schema.anyOf.some((s) => validate(value, s, root))) return false;
    if (schema.oneOf && schema.oneOf.filter((s) => validate(value, s, root)).length !== 1) return false;
    if (schema.allOf && !schema.allOf.every((s) => validate(value, s, root))) return false;
    if (typeof value === 'number') {
      if ('minimum' in schema && value < schema.minimum) return false;
      if ('maximum' in schema && value > schema.maximum) return false;
      if ('exclusiveMinimum' in schema && value <= schema.exclusiveMinimum) return false;
      if ('exclusiveMaximum' in schema && value >= schema.exclusiveMaximum) return false;
      if ('multipleOf' in schema && Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9) return false;
    }
    if (typeof value === 'string') {
      const length = [...value].length;
      if ('minLength' in schema && length < schema.minLength) return false;
      if ('maxLength' in schema && length > schema.maxLength) return false;
      if ('pattern' in schema && !new RegExp(schema.pattern).test(value)) return false;
    }
    if (Array.isArray(value)) {
      if ('minItems' in schema && value.length < schema.minItems) return false;
      if ('maxItems' in schema && value.length > schema.maxItems) return false;
      const prefix = schema.prefixItems || [];
      for (let i = 0; i < value.length; i++) {
        const sub = i < prefix.length ? prefix[i] : schema.items;
        if (sub !== undefined && !validate(value[i], sub, root)) return false;
      }
    }
    if (isObject(value)) {
      const keys = Object.keys(value);
      if ((schema.required || []).some((k) => !keys.includes(k))) return false;
      if ('minProperties' in schema && keys.length < schema.minProperties) return false;
      if ('maxProperties' in schema && keys.length > schema.maxProperties) return false;
      for (const key of keys) {
        const props = schema.properties || {};
        const patterns = Object.entries(schema.patternProperties || {}).filter(([p]) => new RegExp(p).test(key));
        if (key in props) {
          if (!validate(value[key], props[key], root)) return false;
        } else if (patterns.length) {
          if (!patterns.every(([, s]) => validate(value[key], s, root))) return false;
        } else if ('additionalProperties' in schema && !validate(value[key], schema.additionalProperties, root)) {
          return false;
        }
      }
    }
    return true;
  }

  // ------------------------------------------------------------------ examples

  const SAMPLE_FORMATS = {
    'date-time': '2026-01-01T00:00:00Z', time: '00:00:00Z', date: '2026-01-01', duration: 'P1D',
    email: 'someone@example.com', hostname: 'example.com', ipv4: '127.0.0.1', ipv6: '::1',
    uuid: '00000000-0000-4000-8000-000000000000', uri: 'https://example.com/',
  };

  /** A value for `schema`; `hints.text(key)` proposes string content for a property name. */
  function example(schema, hints = {}, root = schema, key = '') {
    if (schema === true || !isObject(schema)) return null;
    if ('$ref' in schema) return example(resolveRef(root, schema.$ref), hints, root, key);
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
    for (const combinator of ['anyOf', 'oneOf']) {
      if (Array.isArray(schema[combinator]) && schema[combinator].length) {
        const { [combinator]: branches, ...rest } = schema;
        for (const branch of branches) {
          const candidate = example({ ...rest, ...branch, properties: { ...rest.properties, ...branch.properties } }, hints, root, key);
          if (validate(candidate, schema, root)) return candidate;
        }
        return example({ ...rest, ...branches[0] }, hints, root, key);
      }
    }
    if (Array.isArray(schema.allOf)) {
      const { allOf, ...rest } = schema;
      const merged = allOf.reduce((acc, s) => ({ ...acc, ...s, properties: { ...acc.properties, ...s.properties },
        required: [...(acc.required || []), ...(s.required || [])] }), rest);
      return example(merged, hints, root, key);
    }
    let type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') ?? 'null' : schema.type;
    if (!type) type = schema.properties ? 'object' : schema.items || schema.prefixItems ? 'array' : 'string';
    if (type === 'object') {
      const out = {};
      for (const [name, sub] of Object.entries(schema.properties || {})) out[name] = example(sub, hints, root, name);
      for (const name of schema.required || []) if (!(name in out)) out[name] = example(schema.additionalProperties ?? {}, hints, root, name);
      return out;
    }
    if (type === 'array') {
      const prefix = (schema.prefixItems || []).map((s) => example(s, hints, root, key));
      while (prefix.length < (schema.minItems || 0)) prefix.push(example(schema.items ?? {}, hints, root, key));
      return prefix;
    }
    if (type === 'integer' || type === 'number') {
      let n = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0);
      if (schema.maximum !== undefined && n > schema.maximum) n = schema.maximum;
      if (type === 'integer') n = Math.ceil(n);
      if (schema.multipleOf) n = Math.ceil(n / schema.multipleOf) * schema.multipleOf;
      return n;
    }
    if (type === 'boolean') return false;
    if (type === 'null') return null;
    if (schema.format && SAMPLE_FORMATS[schema.format]) return SAMPLE_FORMATS[schema.format];
    let text = hints.text ? String(hints.text(key) ?? '') : '';
    if (schema.pattern) {
      const rest = compileRegex(new RegExp(schema.pattern)).complete('');
      text = rest ?? text;
    }
    if (schema.maxLength !== undefined) text = [...text].slice(0, schema.maxLength).join('');
    if (schema.minLength) text = text.padEnd(schema.minLength, 'x');
    return text;
  }

  /**
   * The rest of a JSON reply that starts with the assistant's `prefix`: the shortest tail
   * of `candidate` (a compliant serialization) after which the whole parses and
   * satisfies `schema`; null when no tail does, i.e. the prefix deviates.
   */
  function completeJson(prefix, schema, candidate) {
    for (let i = 0; i <= candidate.length; i++) {
      const rest = candidate.slice(i);
      let value;
      try { value = JSON.parse(prefix + rest); } catch { continue; }
      if (validate(value, schema)) return rest;
    }
    return null;
  }

  // ------------------------------------------------------------------ regular expressions

  class RegexUnsupported extends Error {}

  // Preferred characters when a character class must be written out: readable first.
  const PREFERRED = 'aA0 xX1.-_,:/@"\'*\n';

  function charSet(test, preferred = null) {
    let sample = preferred !== null && test(preferred) ? preferred : null;
    for (const ch of PREFERRED) if (sample === null && test(ch)) sample = ch;
    for (let c = 32; sample === null && c < 0x3000; c++) if (test(String.fromCharCode(c))) sample = String.fromCharCode(c);
    return { test, sample };
  }

  const CLASS_ESCAPES = {
    d: (c) => c >= '0' && c <= '9',
    w: (c) => /[A-Za-z0-9_]/.test(c),
    s: (c) => /\s/.test(c),
  };

  /** Parses a RegExp's source into nodes: {seq}, {alt}, {rep, min, max}, {set}, {bol}, {eol}. */
  function parse(source, flags) {
    let i = 0;
    const fold = flags.includes('i');
    const dotAll = flags.includes('s');
    const fail = (what) => { throw new RegexUnsupported(`${what} at ${i} in /${source}/`); };
    const literal = (ch) => charSet(fold ? (c) => c.toLowerCase() === ch.toLowerCase() : (c) => c === ch, ch);

    function escape(inClass) {
      const c = source[i++];
      if (c === undefined) fail('a dangling backslash');
      const lower = c.toLowerCase();
      if (CLASS_ESCAPES[lower]) {
        const base = CLASS_ESCAPES[lower];
        return { test: c === lower ? base : (ch) => !base(ch) };
      }
      if ('bB'.includes(c) && !inClass) fail('a word boundary');
      if (/[1-9]/.test(c) || c === 'k') fail('a backreference');
      const simple = { n: '\n', t: '\t', r: '\r', f: '\f', v: '\v', 0: '\0' };
      if (c in simple) return { ch: simple[c] };
      if (c === 'x') { const hex = source.slice(i, i + 2); i += 2; return { ch: String.fromCharCode(parseInt(hex, 16)) }; }
      if (c === 'u') {
        if (source[i] === '{') { const end = source.indexOf('}', i); const cp = parseInt(source.slice(i + 1, end), 16); i = end + 1; return { ch: String.fromCodePoint(cp) }; }
        const hex = source.slice(i, i + 4); i += 4; return { ch: String.fromCharCode(parseInt(hex, 16)) };
      }
      if (c === 'p' || c === 'P') fail('a Unicode property escape');
      return { ch: c };
    }

    function charClass() {
      const negate = source[i] === '^';
      if (negate) i++;
      const parts = [];
      let first = true;
      while (i < source.length && (source[i] !== ']' || first)) {
        first = false;
        let lo = source[i++];
        let item = lo === '\\' ? escape(true) : { ch: lo };
        if (item.test) { parts.push(item.test); continue; }
        if (source[i] === '-' && source[i + 1] !== ']' && i + 1 < source.length) {
          i++;
          const hiRaw = source[i++];
          const hi = hiRaw === '\\' ? escape(true) : { ch: hiRaw };
          if (hi.test) fail('a range ending in a class escape');
          const [a, b] = [item.ch, hi.ch];
          parts.push(fold ? (c) => (c.toLowerCase() >= a.toLowerCase() && c.toLowerCase() <= b.toLowerCase()) || (c >= a && c <= b)
            : (c) => c >= a && c <= b);
        } else {
          const ch = item.ch;
          parts.push(fold ? (c) => c.toLowerCase() === ch.toLowerCase() : (c) => c === ch);
        }
      }
      if (source[i] !== ']') fail('an unclosed character class');
      i++;
      const inSet = (c) => parts.some((p) => p(c));
      return { set: charSet(negate ? (c) => !inSet(c) : inSet) };
    }

    function atom() {
      const c = source[i++];
      if (c === '(') {
        if (source[i] === '?') {
          if (source[i + 1] === ':') i += 2;
          else if (source[i + 1] === '<' && source[i + 2] !== '=' && source[i + 2] !== '!') i = source.indexOf('>', i) + 1;
          else fail('a lookaround');
        }
        const inner = alternation();
        if (source[i++] !== ')') fail('an unclosed group');
        return inner;
      }
      if (c === '[') return charClass();
      if (c === '.') return { set: charSet(dotAll ? () => true : (ch) => ch !== '\n' && ch !== '\r') };
      if (c === '^') return { bol: true };
      if (c === '$') return { eol: true };
      if (c === '\\') { const e = escape(false); return { set: e.test ? charSet(e.test) : literal(e.ch) }; }
      if ('*+?{'.includes(c) && c !== '{') fail('a quantifier with nothing to repeat');
      return { set: literal(c) };
    }

    function quantified() {
      let node = atom();
      for (;;) {
        const c = source[i];
        let min; let max;
        if (c === '*') { min = 0; max = Infinity; i++; }
        else if (c === '+') { min = 1; max = Infinity; i++; }
        else if (c === '?') { min = 0; max = 1; i++; }
        else if (c === '{' && /^\{\d+(,\d*)?\}/.test(source.slice(i))) {
          const [, a, comma, b] = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i));
          i += /^\{\d+(,\d*)?\}/.exec(source.slice(i))[0].length;
          min = Number(a);
          max = comma === undefined ? min : b === '' || b === undefined ? Infinity : Number(b);
        } else return node;
        if (source[i] === '?') i++;   // lazy: same language
        if (node.bol || node.eol) fail('a quantified anchor');
        node = { rep: node, min, max };
      }
    }

    function sequence() {
      const items = [];
      while (i < source.length && source[i] !== '|' && source[i] !== ')') items.push(quantified());
      return { seq: items };
    }

    function alternation() {
      const options = [sequence()];
      while (source[i] === '|') { i++; options.push(sequence()); }
      return options.length === 1 ? options[0] : { alt: options };
    }

    const tree = alternation();
    if (i < source.length) fail('an unbalanced ")"');
    return tree;
  }

  /** An NFA of the tree: states with edges {to, set} (consume), {to} (empty), {to, bol|eol}. */
  function build(tree) {
    const states = [];
    const state = () => { states.push([]); return states.length - 1; };
    const MAX_COPIES = 2000;
    function frag(node) {
      const start = state();
      const end = state();
      if (node.set) states[start].push({ to: end, set: node.set });
      else if (node.bol) states[start].push({ to: end, bol: true });
      else if (node.eol) states[start].push({ to: end, eol: true });
      else if (node.seq) {
        let at = start;
        for (const item of node.seq) { const f = frag(item); states[at].push({ to: f.start }); at = f.end; }
        states[at].push({ to: end });
      } else if (node.alt) {
        for (const option of node.alt) { const f = frag(option); states[start].push({ to: f.start }); states[f.end].push({ to: end }); }
      } else if (node.rep) {
        if (node.min > MAX_COPIES || (node.max !== Infinity && node.max > MAX_COPIES)) throw new RegexUnsupported('a repeat count that is too large');
        let at = start;
        for (let k = 0; k < node.min; k++) { const f = frag(node.rep); states[at].push({ to: f.start }); at = f.end; }
        if (node.max === Infinity) {
          const f = frag(node.rep);
          states[at].push({ to: f.start });
          states[f.end].push({ to: at });
        } else {
          for (let k = node.min; k < node.max; k++) {
            const f = frag(node.rep);
            states[at].push({ to: end });
            states[at].push({ to: f.start });
            at = f.end;
          }
        }
        states[at].push({ to: end });
      }
      return { start, end };
    }
    const whole = frag(tree);
    return { states, start: whole.start, accept: whole.end };
  }

  /**
   * compileRegex(regexp).complete(prefix): the shortest text that, after `prefix`, makes a
   * string `regexp.test()` accepts, or null if no string starting with `prefix` matches.
   * test() searches, so the pattern is padded with any text on both sides; ^ can only
   * pass at the start and nothing follows a $, which keeps anchored patterns anchored.
   */
  function compileRegex(regexp) {
    const padded = `[\\s\\S]*?(?:${regexp.source})[\\s\\S]*`;
    const { states, start, accept } = build(parse(padded, regexp.flags));

    // Empty moves from a set of {state, ended} at position `pos` (^ only at 0; after $ no more input).
    function closure(items, pos) {
      const seen = new Map();
      const stack = [...items];
      while (stack.length) {
        const item = stack.pop();
        const key = `${item.state}:${item.ended}`;
        if (seen.has(key)) continue;
        seen.set(key, item);
        for (const edge of states[item.state]) {
          if (edge.set) continue;
          if (edge.bol && pos !== 0) continue;
          stack.push({ state: edge.to, ended: item.ended || Boolean(edge.eol) });
        }
      }
      return [...seen.values()];
    }

    return {
      complete(prefix) {
        let current = closure([{ state: start, ended: false }], 0);
        let pos = 0;
        for (const ch of prefix) {
          const next = [];
          for (const item of current) {
            if (item.ended) continue;
            for (const edge of states[item.state]) if (edge.set && edge.set.test(ch)) next.push({ state: edge.to, ended: false });
          }
          pos += 1;
          current = closure(next, pos);
          if (!current.length) return null;
        }
        // Shortest completion: breadth-first over (state, ended), one character per level.
        const seen = new Set(current.map((c) => `${c.state}:${c.ended}`));
        let level = current.map((c) => ({ ...c, text: '' }));
        for (let depth = 0; level.length && depth < 100000; depth++) {
          const done = level.find((c) => c.state === accept);
          if (done) return done.text;
          const next = [];
          for (const item of level) {
            if (item.ended) continue;
            for (const edge of states[item.state]) {
              if (!edge.set || edge.set.sample === null) continue;
              for (const reached of closure([{ state: edge.to, ended: false }], pos + depth + 1)) {
                const key = `${reached.state}:${reached.ended}`;
                if (seen.has(key)) continue;
                seen.add(key);
                next.push({ ...reached, text: item.text + edge.set.sample });
              }
            }
          }
          level = next;
        }
        return null;
      },
    };
  }

  Object.defineProperty(window, '__fakeLMConstraints', {
    value: Object.freeze({ schemaProblem, validate, example, completeJson, compileRegex, RegexUnsupported,
      KEYWORD_SETS, FORMATS }),
    configurable: true,
  });
})();
