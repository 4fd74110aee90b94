// Checks cflame flame graph output with the real consumers.
//
//   node tests/render/check_spec.mjs FILE_OR_DIR...
//
// Each FILE is either a Vega-Lite spec (.vl.json, fl_vegalite) or a MIME
// bundle (fl_bundle: {"application/vnd.vegalite.v5+json": ..., "image/svg+xml":
// ..., "text/plain": ...}); a DIR stands for the *.json files in it. For a
// spec it:
//   - validates it against the Vega-Lite 5 JSON schema that vega-lite ships,
//   - compiles it with vega-lite's compile(), failing on any warning,
//   - parses the Vega output with vega.parse and renders it headless to SVG,
//     failing on any warning or error vega logs,
//   - types a function name into the search param and checks the matched
//     share the view shows against one computed here from the rows,
//   - checks the data rows: at most 5,000, the fields SPEC.md section 4 names,
//     x1 - x0 == count, pct, depth bounds, parents drawn before children.
// For a bundle it also checks that the SVG is well-formed XML with one <rect>
// and one <title> per row, that text/plain is there, and that the bundle,
// dumped as compact JSON, is under 1 MB.
//
// Exits 0 when every file passes; otherwise prints what failed and exits 1.
// With VEGA_MODULES=DIR (a node_modules directory), uses the vega and
// vega-lite installed there instead, e.g. the versions an older JupyterLab
// ships.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv';
import { XMLValidator, XMLParser } from 'fast-xml-parser';

// $VEGA_MODULES: another node_modules with vega and vega-lite, to check the
// spec with the versions a given JupyterLab ships.
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.VEGA_MODULES || path.join(here, 'node_modules');
const require = createRequire(path.join(modules, 'index.js'));
const vega = require('vega');
const vl = require('vega-lite');
const schema = require('vega-lite/build/vega-lite-schema.json');

const VL_MIME = 'application/vnd.vegalite.v5+json';
const SVG_MIME = 'image/svg+xml';
const MAX_ROWS = 5000;
const MAX_BUNDLE_BYTES = 1000000;

const ajv = new Ajv({ strict: false, allowUnionTypes: true, validateFormats: false });
const validateSchema = ajv.compile(schema);

/* A logger for vega-lite and vega that records every warning and error. */
function recordingLogger(problems, who) {
  let level = 2;
  const logger = {
    level(l) {
      if (l === undefined) return level;
      level = l;
      return logger;
    },
    error(...args) {
      problems.push(`${who} error: ${args.join(' ')}`);
      return logger;
    },
    warn(...args) {
      problems.push(`${who} warning: ${args.join(' ')}`);
      return logger;
    },
    info() {
      return logger;
    },
    debug() {
      return logger;
    },
  };
  return logger;
}

const REQUIRED_FIELDS = {
  id: 'number',
  parent: 'number|null',
  depth: 'number',
  x0: 'number',
  x1: 'number',
  count: 'number',
  self: 'number',
  pct: 'number',
  func: 'string',
  file: 'string|null',
  line: 'number',
  module: 'string|null',
  status: 'number',
  color: 'string',
};

function typeOf(v) {
  return v === null ? 'null' : typeof v;
}

/* The structural checks of the data rows; pushes problems. */
function checkRows(rows, problems) {
  if (!Array.isArray(rows) || rows.length === 0) {
    problems.push('data.values is not a non-empty array');
    return;
  }
  if (rows.length > MAX_ROWS) problems.push(`${rows.length} rows, more than ${MAX_ROWS}`);
  const byId = new Map();
  const root = rows[0];
  rows.forEach((r, i) => {
    for (const [field, types] of Object.entries(REQUIRED_FIELDS)) {
      if (!(field in r)) {
        problems.push(`row ${i} has no field ${field}`);
      } else if (!types.split('|').includes(typeOf(r[field]))) {
        problems.push(`row ${i} field ${field} is ${typeOf(r[field])}, expected ${types}`);
      }
    }
    if (problems.length > 20) return;
    if (r.x1 - r.x0 !== r.count) problems.push(`row ${i}: x1 - x0 != count`);
    if (r.self > r.count) problems.push(`row ${i}: self > count`);
    if (r.x0 < root.x0 || r.x1 > root.x1) problems.push(`row ${i}: outside the root's range`);
    const want = root.count ? (100 * r.count) / root.count : 0;
    if (Math.abs(r.pct - want) > 0.01) problems.push(`row ${i}: pct ${r.pct}, expected ${want}`);
    if (i === 0) {
      if (r.depth !== 0 || r.parent !== null) problems.push('the first row is not the root');
    } else {
      const p = byId.get(r.parent);
      if (!p) {
        problems.push(`row ${i}: parent ${r.parent} is not drawn before it`);
      } else {
        if (r.depth !== p.depth + 1) problems.push(`row ${i}: depth is not its parent's + 1`);
        if (r.x0 < p.x0 || r.x1 > p.x1) problems.push(`row ${i}: outside its parent's range`);
      }
    }
    if (!/^#[0-9a-f]{6}$/.test(r.color)) problems.push(`row ${i}: color ${r.color}`);
    byId.set(r.id, r);
  });
}

/* Validates, compiles and renders one Vega-Lite spec; pushes problems. */
async function checkSpec(spec, problems) {
  if (spec.$schema !== 'https://vega.github.io/schema/vega-lite/v5.json') {
    problems.push(`$schema is ${spec.$schema}`);
  }
  if (!validateSchema(spec)) {
    const errs = validateSchema.errors.slice(0, 5).map(e => `${e.instancePath} ${e.message}`);
    problems.push(`does not match the Vega-Lite 5 schema: ${errs.join('; ')}`);
  }
  checkRows(spec.data && spec.data.values, problems);

  const vlProblems = [];
  let compiled;
  try {
    compiled = vl.compile(spec, { logger: recordingLogger(vlProblems, 'vega-lite') });
  } catch (e) {
    problems.push(`vega-lite compile failed: ${e.stack || e}`);
    return;
  }
  problems.push(...vlProblems);

  const vgProblems = [];
  try {
    const runtime = vega.parse(compiled.spec);
    const view = new vega.View(runtime, {
      renderer: 'none',
      logger: recordingLogger(vgProblems, 'vega'),
      logLevel: vega.Warn,
    });
    const started = process.hrtime.bigint();
    const svg = await view.toSVG();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (!svg.startsWith('<svg') || !svg.includes('<path') || svg.length < 1000) {
      problems.push('vega rendered an empty picture');
    }
    // The search box: set it and check the matched share.
    const rows = spec.data.values;
    const func = rows[Math.floor(rows.length / 2)].func;
    await view.signal('search', func).runAsync();
    const shareText = findTexts(view.scenegraph().root).find(t => /^matched: /.test(t));
    const want = `matched: ${expectedShare(rows, func).toFixed(2)}%`;
    if (shareText !== want) problems.push(`searching "${func}" shows "${shareText}", not "${want}"`);
    view.finalize();
    console.log(`  rendered ${spec.data.values.length} rows in ${ms.toFixed(0)} ms; ` +
                `search "${func}": ${shareText}`);
  } catch (e) {
    problems.push(`vega failed: ${e.stack || e.message}`);
  }
  // Headless, vega has no window to listen to: the drag-pan stream that
  // continues outside the chart ("window:pointermove") is expected to warn
  // here, and only here (browser_test.mjs checks the browser's console).
  problems.push(...vgProblems.filter(p => !/Can not resolve event source: window/.test(p)));
}

/* The matched share of a search, from the rows: the counts of matching
 * frames with no matching ancestor, over the root's, in percent. */
export function expectedShare(rows, text) {
  const needle = text.toLowerCase();
  const byId = new Map(rows.map(r => [r.id, r]));
  const matches = r => r.func.toLowerCase().includes(needle);
  let sum = 0;
  for (const r of rows) {
    if (!matches(r)) continue;
    let p = byId.get(r.parent);
    while (p && !matches(p)) p = byId.get(p.parent);
    if (!p) sum += r.count;
  }
  return rows[0].count ? (100 * sum) / rows[0].count : 0;
}

/* The texts of every text item in a scenegraph. */
function findTexts(node, out = []) {
  if (!node) return out;
  if (node.marktype === 'text' && node.items) {
    for (const it of node.items) if (it.text) out.push(String(it.text));
  }
  for (const it of node.items || []) findTexts(it, out);
  return out;
}

/* Well-formedness and structure of the SVG; pushes problems. */
function checkSvg(svg, nRows, problems) {
  if (typeof svg !== 'string') {
    problems.push('image/svg+xml is not a string');
    return;
  }
  const valid = XMLValidator.validate(svg);
  if (valid !== true) {
    problems.push(`SVG is not well-formed XML: ${JSON.stringify(valid.err)}`);
    return;
  }
  const doc = new XMLParser({ ignoreAttributes: false }).parse(svg);
  const root = doc.svg;
  if (!root || root['@_xmlns'] !== 'http://www.w3.org/2000/svg') {
    problems.push('SVG has no <svg xmlns="http://www.w3.org/2000/svg"> root');
    return;
  }
  const rects = (svg.match(/<rect\b[^>]*>\s*<title>/g) || []).length;
  if (rects !== nRows) problems.push(`SVG has ${rects} frame rects with a title, expected ${nRows}`);
}

async function checkFile(file) {
  const problems = [];
  const text = fs.readFileSync(file, 'utf8');
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return [`not JSON: ${e.message}`];
  }
  if (doc[VL_MIME]) {
    const bytes = Buffer.byteLength(JSON.stringify(doc));
    if (bytes >= MAX_BUNDLE_BYTES) problems.push(`bundle is ${bytes} bytes, not under 1 MB`);
    if (typeof doc['text/plain'] !== 'string' || doc['text/plain'].length === 0) {
      problems.push('bundle has no text/plain');
    }
    const rows = doc[VL_MIME].data && doc[VL_MIME].data.values;
    checkSvg(doc[SVG_MIME], Array.isArray(rows) ? rows.length : -1, problems);
    console.log(`  bundle ${bytes} bytes, SVG ${Buffer.byteLength(doc[SVG_MIME] || '')} bytes`);
    await checkSpec(doc[VL_MIME], problems);
  } else {
    await checkSpec(doc, problems);
  }
  return problems;
}

/* The files named, with each directory replaced by its *.json files. */
function expandDirs(names) {
  return names.flatMap(name =>
    fs.statSync(name).isDirectory()
      ? fs.readdirSync(name).filter(f => f.endsWith('.json')).sort().map(f => path.join(name, f))
      : [name]);
}

const files = expandDirs(process.argv.slice(2));
if (files.length === 0) {
  console.error('usage: node check_spec.mjs SPEC_OR_BUNDLE.json|DIR...');
  process.exit(2);
}
let failed = 0;
for (const file of files) {
  console.log(`${file}:`);
  const problems = await checkFile(file);
  if (problems.length) {
    failed++;
    for (const p of problems.slice(0, 30)) console.log(`  FAIL ${p}`);
  } else {
    console.log('  ok');
  }
}
console.log(`${files.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
