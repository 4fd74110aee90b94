// SPDX-License-Identifier: BSD-3-Clause
// Checks cflame flame graph output with the real consumers.
//
//   node tests/render/check_spec.mjs FILE_OR_DIR...
//
// Each FILE is either a Vega-Lite spec (.vl.json, fl_vegalite) or a MIME
// bundle (fl_bundle: {"application/vnd.vegalite.v5+json": ...,
// "text/markdown": ..., "text/plain": ...}); a DIR stands for the *.json
// files in it. For a
// spec it:
//   - validates it against the Vega-Lite 5 JSON schema that vega-lite ships,
//   - compiles it with vega-lite's compile(), failing on any warning,
//   - parses the Vega output with vega.parse and renders it headless to SVG,
//     failing on any warning or error vega logs,
//   - types a function name into the search param and checks the matched
//     share the view shows against one computed here from the rows,
//   - checks the data rows (read by frames.mjs from the spec's columns and
//     string table): at most 5,000, the fields cflame's docs name,
//     x1 - x0 == count, pct, depth bounds, parents drawn before children;
//     and that vega computes the same rows from the spec's transforms;
//   - checks that vega draws each frame above its parent, or below it in an
//     icicle (usermeta.cflame.icicle: icicle=true, view=icicle).
// For a bundle it also checks that text/markdown holds the SVG as one HTML
// block, well-formed XML with one <path> and one <title> per row, each
// filled with its row's colour; that the bundle holds the SVG once (no
// image/svg+xml item) and no text/html, which would outrank the spec in
// JupyterLab; that text/plain is there; and that the bundle, dumped as
// compact JSON, is under 1 MB.
//
// A differential flame graph (fl_vegalite_diff, fl_diff_bundle: rows with a
// change field, usermeta.cflame.diff) is also checked for what a diff adds
// (checkDiff):
//   - rows: base (number, or null exactly for new frames), delta (number;
//     count - base, or self - base_self with delta=self), change in
//     grew|shrank|same|new, grew with delta > 0, shrank with delta < 0;
//   - colours: the legend names grew, shrank, same, new, in that order, in a
//     red, a blue, a grey and a colour that is none of these; each row's
//     colour agrees with its change: the legend's grey or new colour, or
//     the hue of its red or blue, never near grey, more saturated (or as
//     saturated) for a bigger |delta| whichever its sign, and the full
//     colour at the largest |delta|;
//   - notes: the summary line, and the negate line when negated;
//   - the vanished list: a text layer with a dataset of its own (not the
//     frames' data.values) when frames vanished, and only then: a header,
//     one line per frame widest first (at most 20, then "… and K more"),
//     and vega draws those texts;
//   - rendered: vega draws each frame in its row's colour and the legend's
//     four labels; a bundle's SVG has the vanished header, its text the
//     Delta and Change columns.
//
// A view other than the flame graph (usermeta.cflame.view, views.mjs) is
// validated, compiled and rendered alike, and checked for what it shows:
//   - top: its rows (function, self <= total, colour), the rows vega ranks
//     and draws for sort=self and again for sort=total (the first 50, in
//     order, with their shares and the running sum of self shares), each
//     self bar in its row's colour, the sorted column marked in its header;
//     a bundle's SVG is well-formed, with one titled row per table line,
//     and its text has both tables;
//   - source: its rows (a file row, then its lines in order, gaps between
//     windows), and what vega draws: each line's source text and number,
//     two bars per line, lines without samples dimmed; a bundle's SVG is
//     well-formed, with one titled bar per line with samples, and its text
//     has the table's header;
//   - top of a diff: rows ranked by |delta|, each change (grew, shrank,
//     same, new, vanished) agreeing with its delta's sign, a bar per row in
//     its change's colour;
//   - sandwich: both halves' rows (the flame graph's checks), the focus the
//     one frame under each half's root, as wide as its total; vega draws
//     every frame of both in its colour;
//   - chart: its bars (within the time range, each inside the bar above
//     it, the top bars adding up to the samples), what vega draws (a rect
//     per bar in its colour, the x domain the range), and a bundle's SVG
//     with a titled bar per bar.
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

import { framesOf, svgOf } from './frames.mjs';
import { viewOf, topRowsProblem, topDrawnProblem, expectedTop, sourceRows, sourceRowsProblem,
         hotLines, chartBars, chartProblem, topDiffProblem, topRows, changedLines, sourceDiffProblem,
         sandwichHalves } from './views.mjs';

// $VEGA_MODULES: another node_modules with vega and vega-lite, to check the
// spec with the versions a given JupyterLab ships.
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.VEGA_MODULES || path.join(here, 'node_modules');
const require = createRequire(path.join(modules, 'index.js'));
const vega = require('vega');
const vl = require('vega-lite');
const schema = require('vega-lite/build/vega-lite-schema.json');

const VL_MIME = 'application/vnd.vegalite.v5+json';
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
    problems.push('data.values is not one object of non-empty columns, flattened by the first transform');
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
  // What a frame says on the graph: two siblings never look the same
  // (four frames "count_primes" side by side read as a bug).
  const seen = new Map();
  for (const r of rows) {
    if (typeof r.label !== 'string' || !r.label.startsWith(r.func)) {
      problems.push(`row ${r.id}: label ${JSON.stringify(r.label)} does not name ${r.func}`);
      continue;
    }
    const key = `${r.parent} ${r.label}`;
    if (seen.has(key)) problems.push(`rows ${seen.get(key)} and ${r.id}: siblings both labelled ${JSON.stringify(r.label)}`);
    seen.set(key, r.id);
  }
}

/* ---- differential flame graphs ---- */

const CHANGES = ['grew', 'shrank', 'same', 'new'];

function isDiff(spec) {
  const rows = framesOf(spec);
  return Array.isArray(rows) && rows.length > 0 && 'change' in rows[0];
}

function rgbOf(hex) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/.exec(hex || '');
  return m ? { r: parseInt(m[1], 16), g: parseInt(m[2], 16), b: parseInt(m[3], 16) } : null;
}

/* max - min of the channels: 0 for greys. */
function chromaOf(c) {
  return Math.max(c.r, c.g, c.b) - Math.min(c.r, c.g, c.b);
}

/* The HSL hue in degrees (0 for greys). */
function hueOf(c) {
  const max = Math.max(c.r, c.g, c.b), d = chromaOf(c);
  if (d === 0) return 0;
  let h;
  if (max === c.r) h = ((c.g - c.b) / d) % 6;
  else if (max === c.g) h = (c.b - c.r) / d + 2;
  else h = (c.r - c.g) / d + 4;
  return (h * 60 + 360) % 360;
}

function hueDistance(a, b) {
  const d = Math.abs(a - b) % 360;
  return Math.min(d, 360 - d);
}

/* The layer named name, or undefined. */
function layerNamed(spec, name) {
  return (spec.layer || []).find(l => l.name === name);
}

/* The legend's colour per change, from the legend layer; pushes problems. */
function diffLegend(spec, problems) {
  const legend = layerNamed(spec, 'legend');
  const color = legend && legend.encoding && legend.encoding.color;
  const scale = color && color.scale;
  if (!scale || !Array.isArray(scale.domain) || !Array.isArray(scale.range)) {
    problems.push('diff: no legend layer with a colour scale');
    return null;
  }
  const colors = {};
  CHANGES.forEach((change, i) => {
    const label = scale.domain[i];
    if (typeof label !== 'string' || !label.startsWith(change)) {
      problems.push(`diff legend entry ${i} is ${JSON.stringify(label)}, not "${change}…"`);
    }
    colors[change] = scale.range[i];
  });
  if (typeof color.legend?.title !== 'string' || !color.legend.title.includes('\u2212')) {
    problems.push(`diff legend title ${JSON.stringify(color.legend?.title)} says no "a − b"`);
  }
  const [grew, shrank, same, added] = CHANGES.map(c => rgbOf(colors[c]));
  if (!grew || !shrank || !same || !added) {
    problems.push(`diff legend colours ${JSON.stringify(colors)}`);
    return null;
  }
  if (hueDistance(hueOf(grew), 0) > 15 || chromaOf(grew) < 100) problems.push(`grew colour ${colors.grew} is not a red`);
  if (hueDistance(hueOf(shrank), 220) > 20 || chromaOf(shrank) < 100) problems.push(`shrank colour ${colors.shrank} is not a blue`);
  if (chromaOf(same) !== 0) problems.push(`same colour ${colors.same} is not a grey`);
  if (chromaOf(added) < 60 || hueDistance(hueOf(added), hueOf(grew)) < 30 ||
      hueDistance(hueOf(added), hueOf(shrank)) < 30) {
    problems.push(`new colour ${colors.new} is too close to grey, red or blue`);
  }
  return colors;
}

/* The title's text and subtitle lines. */
function titleLines(spec) {
  const t = spec.title;
  if (!t) return [];
  if (typeof t === 'string') return [t];
  return [].concat(t.text || [], t.subtitle || []);
}

/* What a diff adds: rows, colours, legend, notes, vanished list; pushes
 * problems. Returns what the rendered checks need. */
function checkDiff(spec, problems) {
  const meta = spec.usermeta && spec.usermeta.cflame && spec.usermeta.cflame.diff;
  if (!meta) {
    problems.push('diff: no usermeta.cflame.diff');
    return null;
  }
  const rows = framesOf(spec);
  const colors = diffLegend(spec, problems);
  const self = meta.delta === 'self';
  const changed = [];
  rows.forEach((r, i) => {
    if (problems.length > 30) return;
    if (!CHANGES.includes(r.change)) problems.push(`row ${i}: change ${JSON.stringify(r.change)}`);
    if (typeof r.delta !== 'number') problems.push(`row ${i}: delta is ${typeOf(r.delta)}`);
    if (!['number', 'null'].includes(typeOf(r.base))) problems.push(`row ${i}: base is ${typeOf(r.base)}`);
    if ((r.base === null) !== (r.change === 'new')) problems.push(`row ${i}: base ${r.base} with change ${r.change}`);
    if (self && !('base_self' in r)) problems.push(`row ${i}: delta=self, and no base_self`);
    if (r.base !== null) {
      const want = self ? r.self - r.base_self : r.count - r.base;
      if (Math.abs(r.delta - want) > 1e-3 * Math.max(1, Math.abs(want))) {
        problems.push(`row ${i}: delta ${r.delta}, expected ${want}`);
      }
    }
    if (r.change === 'grew' && !(r.delta > 0)) problems.push(`row ${i}: grew with delta ${r.delta}`);
    if (r.change === 'shrank' && !(r.delta < 0)) problems.push(`row ${i}: shrank with delta ${r.delta}`);
    if (!colors) return;
    const c = rgbOf(r.color);
    if (!c) return;
    if (r.change === 'same' || r.change === 'new') {
      if (r.color !== colors[r.change]) problems.push(`row ${i} (${r.change}): colour ${r.color}, not ${colors[r.change]}`);
      return;
    }
    const full = rgbOf(colors[r.change]);
    if (chromaOf(c) < 0.15 * chromaOf(full)) problems.push(`row ${i} (${r.change}): colour ${r.color} is nearly grey`);
    else if (hueDistance(hueOf(c), hueOf(full)) > 8) problems.push(`row ${i} (${r.change}): colour ${r.color} is not the hue of ${colors[r.change]}`);
    if (Math.abs(Math.abs(r.delta) - meta.max_delta) < 1e-6 * Math.max(1, meta.max_delta) && r.color !== colors[r.change]) {
      problems.push(`row ${i} (${r.change}): the largest |delta| in ${r.color}, not the full ${colors[r.change]}`);
    }
    changed.push({ i, mag: Math.abs(r.delta), chroma: chromaOf(c) });
  });
  // One symmetric scale: a bigger |delta| is never paler, red or blue.
  changed.sort((a, b) => a.mag - b.mag || a.chroma - b.chroma);
  for (let k = 1; k < changed.length; k++) {
    const a = changed[k - 1], b = changed[k];
    if (b.mag > a.mag && b.chroma + 2 < a.chroma) {
      problems.push(`row ${b.i} (|delta| ${b.mag}) is paler than row ${a.i} (|delta| ${a.mag})`);
      break;
    }
  }

  const lines = titleLines(spec);
  const summary = lines.map(l => /^grew: ([\d,]+) frames?, shrank: ([\d,]+), new: ([\d,]+), vanished: ([\d,]+); /.exec(l)).find(m => m);
  if (!summary) {
    problems.push(`diff: no summary among the notes ${JSON.stringify(lines)}`);
  } else {
    // It counts what is drawn: the frames in each change's colour, the root
    // included, and the vanished list.
    const said = summary.slice(1).map(x => Number(x.replace(/,/g, '')));
    const drawn = ['grew', 'shrank', 'new'].map(c => rows.filter(r => r.change === c).length);
    if (said.slice(0, 3).join() !== drawn.join() || said[3] !== meta.vanished) {
      problems.push(`diff summary "${summary[0]}" counts grew, shrank, new, vanished ${said}; drawn: ${drawn}, ${meta.vanished}`);
    }
  }
  const negated = lines.includes('baseline layout, coloured by baseline \u2212 target');
  if (negated !== !!meta.negate) problems.push(`diff: negate ${meta.negate}, and the notes ${JSON.stringify(lines)}`);

  // The vanished list: its own data, a header, widest first, at most 20.
  const layer = layerNamed(spec, 'vanished');
  const V = meta.vanished;
  let texts = [];
  if ((V > 0) !== !!layer) problems.push(`diff: ${V} frames vanished, and ${layer ? 'a' : 'no'} vanished layer`);
  if (layer) {
    const values = layer.data && layer.data.values;
    if (!Array.isArray(values) || values === spec.data.values) {
      problems.push('vanished layer has no dataset of its own');
    } else {
      const shown = Math.min(V, 20);
      if (values.length !== 1 + shown + (V > shown ? 1 : 0)) {
        problems.push(`vanished layer has ${values.length} lines for ${V} frames`);
      }
      if (!/^(Vanished \(in the baseline only\)|Only in the target \(not drawn\)):$/.test(values[0].text)) {
        problems.push(`vanished header ${JSON.stringify(values[0].text)}`);
      }
      const other = meta.negate ? 'target' : 'baseline';
      for (let k = 1; k <= shown && k < values.length; k++) {
        const v = values[k];
        if (typeof v.func !== 'string' || typeof v.count !== 'number' || !v.text.startsWith(v.func) ||
            !v.text.includes(`\u2014 ${other} `)) {
          problems.push(`vanished line ${k}: ${JSON.stringify(v)}`);
          break;
        }
        if (k > 1 && v.count > values[k - 1].count) problems.push(`vanished line ${k} is wider than the one before`);
      }
      if (V > shown) {
        const m = /^\u2026 and ([\d,]+) more$/.exec(values[values.length - 1].text);
        if (!m || Number(m[1].replace(/,/g, '')) !== V - shown) {
          problems.push(`vanished list ends with ${JSON.stringify(values[values.length - 1].text)}`);
        }
      }
      texts = values.map(v => v.text);
    }
  }
  return { colors, legendLabels: layerNamed(spec, 'legend')?.encoding?.color?.scale?.domain || [], texts };
}

/* Every item of a mark type in a scenegraph. */
function findItems(node, marktype, out = []) {
  if (!node) return out;
  if (node.marktype === marktype && node.items) out.push(...node.items);
  for (const it of node.items || []) findItems(it, marktype, out);
  return out;
}

/* The spec compiled by vega-lite, which must not warn; null (with the
 * problem pushed) when it cannot be. */
function compileSpec(spec, problems) {
  const vlProblems = [];
  try {
    const compiled = vl.compile(spec, { logger: recordingLogger(vlProblems, 'vega-lite') });
    problems.push(...vlProblems);
    return compiled;
  } catch (e) {
    problems.push(`vega-lite compile failed: ${e.stack || e}`);
    return null;
  }
}

/* A graph deeper than its height (usermeta.cflame: levels, shown) draws
 * its levels below the band's and the band's frames with nothing deeper
 * (drawn), and the band's level's other frames as pieces of the band. */
function bandOf(spec, rows) {
  const meta = spec.usermeta?.cflame || {};
  // A sandwich's half has no usermeta: its y domain says how many levels it shows.
  const half = (spec.layer || []).map(l => /\+ (\d+)\]$/.exec(l.encoding?.y?.scale?.domain?.expr || '')).find(Boolean);
  const shown = meta.shown ?? (half ? Number(half[1]) : undefined), levels = meta.levels ?? Infinity;
  if (!(shown < levels)) return { drawn: rows, pieces: [] };
  const cut = shown - 1;
  return { cut, drawn: rows.filter(r => r.depth < cut || (r.depth === cut && r.deep === r.depth)),
           pieces: rows.filter(r => r.depth === cut && r.deep > r.depth) };
}

function isBand(item) {
  return /^band/.test(item.mark?.name || '');
}

/* The band: a piece per frame of its level with deeper ones, each saying
 * how many levels it holds where it is wide enough for text; the root
 * labelled; every level below it drawn. */
function checkBand(view, pieces, band, problems) {
  const want = new Set(band.pieces.map(r => r.id)), got = new Set(pieces.map(it => it.datum.id));
  if (want.size !== got.size || [...want].some(id => !got.has(id)))
    problems.push(`vega drew ${got.size} pieces of the band, expected ${want.size}`);
  const texts = findTexts(view.scenegraph().root);
  for (const r of band.pieces) {
    const words = `\u2026 ${(r.deep - r.depth + 1).toLocaleString('en-US')} more levels`;
    const item = pieces.find(it => it.datum.id === r.id);
    if (item && item.width >= 60 && !texts.some(t => t.startsWith(words)))
      problems.push(`the band's piece over ${r.func} does not say ${JSON.stringify(words)}`);
  }
  const root = band.drawn.find(r => r.depth === 0);
  if (!texts.includes(root.label)) problems.push(`the root (${root.label}) is not labelled`);
  const levels = new Set(band.drawn.map(r => r.depth));
  if (levels.size !== band.cut + 1 && levels.size !== band.cut)
    problems.push(`${levels.size} levels drawn under the band at ${band.cut}`);
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
  const rows = framesOf(spec);
  checkRows(rows, problems);
  if (!rows || rows.length === 0) return;
  const diff = isDiff(spec) ? checkDiff(spec, problems) : null;
  const compiled = compileSpec(spec, problems);
  if (!compiled) return;

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
    problems.push(...tooltipProblems(view));
    if (!svg.startsWith('<svg') || !svg.includes('<path') || svg.length < 1000) {
      problems.push('vega rendered an empty picture');
    }
    // Each frame in its row's colour; a diff's legend and vanished list.
    const rects = findItems(view.scenegraph().root, 'rect').filter(it => it.datum && it.datum.x1 !== undefined);
    const frames = rects.filter(it => !isBand(it));
    const band = bandOf(spec, rows);
    const miscoloured = frames.filter(it => it.fill !== it.datum.color);
    if (frames.length !== band.drawn.length || miscoloured.length) {
      problems.push(`vega drew ${frames.length} frames of ${band.drawn.length}, ${miscoloured.length} not in their row's colour`);
    }
    if (band.pieces.length) checkBand(view, rects.filter(isBand), band, problems);
    // The root at the bottom, each frame drawn above its parent; in an
    // icicle (usermeta.cflame.icicle) the root at the top, each below.
    const icicle = spec.usermeta?.cflame?.icicle === true;
    const yOf = new Map(frames.map(it => [it.datum.id, it.y]));
    const flipped = frames.find(it => yOf.has(it.datum.parent) &&
      (icicle ? it.y <= yOf.get(it.datum.parent) : it.y >= yOf.get(it.datum.parent)));
    if (flipped) {
      problems.push(`${flipped.datum.func} is drawn at y ${flipped.y}, not ${icicle ? 'below' : 'above'} ` +
                    `its parent at ${yOf.get(flipped.datum.parent)}${icicle ? ' (an icicle)' : ''}`);
    }
    // Levels are tall enough for their labels, however deep the graph.
    const levelPx = spec.height / (band.pieces.length ? band.cut + 1 : Math.max(...rows.map(r => r.depth)) + 1);
    if (levelPx < 10) problems.push(`levels ${levelPx.toFixed(1)} px tall, too thin for labels`);
    // A plain graph's frames look like the legend's swatches: each within 20
    // of one on every channel (a diff's colours are checked by checkDiff).
    if (!diff) {
      const swatches = (layerNamed(spec, 'legend')?.encoding?.color?.scale?.range || []).map(rgbOf);
      const near = (a, b) => a && b && ['r', 'g', 'b'].every(c => Math.abs(a[c] - b[c]) <= 20);
      const far = frames.find(it => !swatches.some(w => near(rgbOf(it.fill), w)));
      if (far) problems.push(`frame ${far.datum.func} is drawn in ${far.fill}, like no legend swatch`);
    }
    // Tooltips as vega computes them for vega-tooltip: the location only as
    // far as it is known, never "?" or "null", and the module not again
    // when it is the file (a cell's).
    for (const it of frames) {
      const problem = tooltipProblem(it.tooltip, it.datum);
      if (problem) {
        problems.push(`tooltip of ${it.datum.func}: ${problem}: ${JSON.stringify(it.tooltip)}`);
        break;
      }
    }
    if (diff) {
      const drawn = findTexts(view.scenegraph().root);
      for (const want of [...diff.legendLabels, ...diff.texts]) {
        if (!drawn.includes(want)) problems.push(`vega did not draw the text ${JSON.stringify(want)}`);
      }
    }
    // The rows as vega computes them from the spec's transforms are the
    // rows frames.mjs reads (and tests/lib, tests/unit, which read alike).
    const byId = new Map(rows.map(r => [r.id, r]));
    for (const it of frames) {
      const want = byId.get(it.datum.id);
      const differs = want ? Object.keys(want).find(k => k === 'pct'
        ? Math.abs(want.pct - it.datum.pct) > 1e-9 : want[k] !== it.datum[k]) : 'id';
      if (differs) {
        problems.push(`vega's row ${it.datum.id} has ${differs} = ${JSON.stringify(it.datum[differs])}, ` +
                      `frames.mjs reads ${JSON.stringify(want && want[differs])}`);
        break;
      }
    }
    // The search box: set it and check the matched share.
    const func = rows[Math.floor(rows.length / 2)].func;
    await view.signal('search', func).runAsync();
    const shareText = findTexts(view.scenegraph().root).find(t => /^matched: /.test(t));
    const want = `matched: ${expectedShare(rows, func).toFixed(2)}%`;
    if (shareText !== want) problems.push(`searching "${func}" shows "${shareText}", not "${want}"`);
    view.finalize();
    console.log(`  rendered ${rows.length} rows in ${ms.toFixed(0)} ms; ` +
                `search "${func}": ${shareText}`);
  } catch (e) {
    problems.push(`vega failed: ${e.stack || e.message}`);
  }
  // Headless, vega has no window to listen to: the drag-pan stream that
  // continues outside the chart ("window:pointermove") is expected to warn
  // here, and only here (browser_test.mjs checks the browser's console).
  problems.push(...vgProblems.filter(p => !/Can not resolve event source: window/.test(p)));
}

/* "1 samples", "1 allocations": one of a thing said in the plural. */
const ONE_OF_MANY = /(^|[^\d.,])[+-]?1 (samples|bytes|allocations|stacks)\b/;

/* What is wrong with a frame's tooltip object, or null. */
function tooltipProblem(tip, d) {
  if (!tip || typeof tip !== 'object') return 'no tooltip object';
  if (tip.function !== d.func) return 'its function is not the row\'s';
  for (const [k, v] of Object.entries(tip)) {
    if (v === undefined) continue; // vega-tooltip leaves it out
    if (v === null || v === '?' || String(v) === 'null' || String(v) === 'undefined') return `${k} is ${v}`;
    if (ONE_OF_MANY.test(String(v))) return `${k} is ${v}: one, in the plural`;
  }
  const where = d.file ? d.file + (d.line ? `:${d.line}` : '') : undefined;
  if (tip['file:line'] !== where) return `file:line ${tip['file:line']}, not ${where}`;
  const module = d.module && d.module !== d.file ? d.module : undefined;
  if (tip.module !== module) return `module ${tip.module}, not ${module}`;
  return null;
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
function checkSvg(svg, rows, problems) {
  if (typeof svg !== 'string') {
    problems.push('no SVG in text/markdown');
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
  // Tooltips (<title>s) say where a frame is only as far as that is known:
  // no "?" line, and the module not again when it is the file.
  for (const title of svg.match(/<title>[^<]*<\/title>/g) || []) {
    const lines = title.slice(7, -8).split('\n');
    const bad = lines.find(l => l === '?' || /^(.+?)(:\d+)? \(\1\)$/.test(l) || ONE_OF_MANY.test(l));
    if (bad !== undefined) {
      problems.push(`SVG tooltip line ${JSON.stringify(bad)} in ${JSON.stringify(title)}`);
      break;
    }
  }
  // Frames are paths with a title, in groups that give their colour
  // (fl_svg.c), each title led by the frame's label: the frames drawn in
  // each colour are the rows of that colour, label for label.
  const drawn = [];
  let color = null;
  for (const m of svg.matchAll(/<g stroke='(#[0-9a-f]{6})'>|<path\b[^>]*>\s*<title>([^\n<]*)/g)) {
    if (m[1]) color = m[1];
    else drawn.push(`${color} ${unescapeXml(m[2])}`);
  }
  if (drawn.length !== rows.length) problems.push(`SVG has ${drawn.length} frames (paths) with a title, expected ${rows.length}`);
  const want = rows.map(r => `${r.color} ${r.label}`).sort();
  drawn.sort();
  const wrong = want.findIndex((w, i) => w !== drawn[i]);
  if (wrong >= 0) problems.push(`SVG draws "${drawn[wrong]}" where a row is "${want[wrong]}"`);
}

/* Problems of the tooltips vega drew: a tooltip shows each key with its
 * value, so none may read "null" or "undefined" (a field a frame has not,
 * such as a cell frame's module, is left out). */
function tooltipProblems(view) {
  const bad = new Set();
  const walk = node => {
    for (const it of node?.items || []) {
      const tip = it.tooltip;
      if (tip && typeof tip === 'object') {
        for (const [k, v] of Object.entries(tip)) {
          // vega-tooltip leaves out a key whose value is undefined
          if (v === undefined) continue;
          if (v === null || /\b(null|undefined|NaN)\b/.test(String(v))) bad.add(`${k}: ${v}`);
        }
      }
      walk(it);
    }
  };
  walk(view.scenegraph().root);
  return [...bad].slice(0, 5).map(b => `a tooltip shows "${b}"`);
}

/* An XML text node's text, its five entities read. */
function unescapeXml(s) {
  const entities = { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' };
  return s.replace(/&(lt|gt|amp|apos|quot);/g, (_, e) => entities[e]);
}

/* A view other than the flame graph: validated against the schema, its
 * rows checked (rowsProblem: a message or null), compiled with no
 * warnings, rendered headless, and then inspect(view) checks what vega
 * drew (returning a line for the log). Pushes problems; vega's warnings
 * are problems too, but the one of the pan stream that listens on the
 * window, which headless vega has not (as for the flame graph). */
async function checkView(spec, what, rowsProblem, inspect, problems) {
  if (!validateSchema(spec)) {
    const errs = validateSchema.errors.slice(0, 5).map(e => `${e.instancePath} ${e.message}`);
    problems.push(`does not match the Vega-Lite 5 schema: ${errs.join('; ')}`);
  }
  const bad = rowsProblem(spec);
  if (bad) {
    problems.push(`${what}: ${bad}`);
    return;
  }
  const compiled = compileSpec(spec, problems);
  if (!compiled) return;
  const vgProblems = [];
  try {
    const view = new vega.View(vega.parse(compiled.spec), {
      renderer: 'none', logger: recordingLogger(vgProblems, 'vega'), logLevel: vega.Warn,
    });
    await view.runAsync();
    const svg = await view.toSVG();
    if (!svg.startsWith('<svg') || svg.length < 1000) problems.push('vega rendered an empty picture');
    problems.push(...tooltipProblems(view));
    const note = await inspect(view);
    view.finalize();
    console.log(`  ${what}: ${note}`);
  } catch (e) {
    problems.push(`vega failed: ${e.stack || e.message}`);
  }
  problems.push(...vgProblems.filter(p => !/Can not resolve event source: window/.test(p)));
}

/* A top view (views.mjs): the rows vega ranks and draws for each sort
 * order; pushes problems. */
async function checkTop(spec, problems) {
  await checkView(spec, 'top', topRowsProblem, async view => {
    for (const sort of ['self', 'total']) {
      await view.signal('sort', sort).runAsync();
      const bars = findItems(view.scenegraph().root, 'rect').filter(it => it.datum?.rank !== undefined);
      const selfBars = bars.filter(it => it.fill === it.datum.color);
      const problem = topDrawnProblem(spec, selfBars.map(it => it.datum), sort);
      if (problem) problems.push(problem);
      if (bars.length !== 2 * selfBars.length) {
        problems.push(`sort=${sort}: ${bars.length} bars for ${selfBars.length} self bars in their colour`);
      }
      // Clicking a header sorts nothing: none may carry an arrow that
      // says it would; the radio buttons say the order.
      const texts = findTexts(view.scenegraph().root);
      for (const header of ['Self', 'Total']) {
        if (!texts.includes(header)) problems.push(`sort=${sort}: no header "${header}"`);
      }
      const arrows = texts.filter(t => /[\u25b2\u25bc\u2191\u2193]/.test(t));
      if (arrows.length) problems.push(`sort=${sort}: headers with a sort arrow: ${arrows.join(', ')}`);
    }
    return `${expectedTop(spec, 'self').length} rows drawn of ${spec.usermeta.cflame.functions} functions`;
  }, problems);
}

/* A top table of a diff: a bar per row in its change's colour; pushes
 * problems. */
async function checkTopDiff(spec, problems) {
  await checkView(spec, 'top of a diff', topDiffProblem, async view => {
    const rows = topRows(spec);
    const bars = findItems(view.scenegraph().root, 'rect').filter(it => it.datum?.rank !== undefined);
    if (bars.length !== rows.length) problems.push(`${bars.length} bars for ${rows.length} rows`);
    const off = bars.filter(it => it.fill !== it.datum.color).length;
    if (off) problems.push(`${off} bars not in their change's colour`);
    return `${rows.length} changes drawn of ${spec.usermeta.cflame.functions} functions`;
  }, problems);
}

/* What is wrong with a sandwich's halves, or null; problems of their rows
 * are pushed. */
function sandwichProblem(spec, problems) {
  const meta = spec.usermeta.cflame, halves = sandwichHalves(spec);
  if (halves.length !== 2) return `${halves.length} halves`;
  for (const [i, half] of halves.entries()) {
    const rows = framesOf(half);
    checkRows(rows, problems);
    if (!rows || rows.length < 2) return `half ${i} has no frames`;
    const under = rows.filter(r => r.parent === rows[0].id);
    if (under.length !== 1 || under[0].func !== meta.focus || under[0].count !== meta.total) {
      return `half ${i}: under the root ${JSON.stringify(under.map(r => [r.func, r.count]))}, ` +
             `not ${meta.focus} with ${meta.total}`;
    }
  }
  return null;
}

/* A sandwich: every frame of both halves drawn in its colour; pushes
 * problems. */
async function checkSandwich(spec, problems) {
  await checkView(spec, 'sandwich', s => sandwichProblem(s, problems), async view => {
    const n = sandwichHalves(spec).reduce((k, h) => k + bandOf(h, framesOf(h)).drawn.length, 0);
    const rects = findItems(view.scenegraph().root, 'rect').filter(it => it.datum?.x1 !== undefined && !isBand(it));
    if (rects.length !== n) problems.push(`vega drew ${rects.length} frames for ${n} rows`);
    const off = rects.filter(it => it.fill !== it.datum.color).length;
    if (off) problems.push(`${off} frames not in their colour`);
    // Labels find their frames through each half's own scales.
    const labels = findItems(view.scenegraph().root, 'text')
      .filter(it => it.datum?.x1 !== undefined && it.text).length;
    if (labels < 2) problems.push(`${labels} frames labelled: the labels lost their scales`);
    return `${n} frames around ${spec.usermeta.cflame.focus}, ${labels} labelled`;
  }, problems);
}

/* A source view: each line's text (its indentation an offset) and number,
 * two bars per line, lines without samples dimmed; pushes problems. */
async function checkSource(spec, problems) {
  await checkView(spec, 'source', sourceRowsProblem, async view => {
    const rows = sourceRows(spec), lines = rows.filter(r => r.k === 'line');
    const root = view.scenegraph().root;
    const bars = findItems(root, 'rect').filter(it => it.datum?.k === 'line');
    if (bars.length !== 2 * lines.length) problems.push(`${bars.length} bars for ${lines.length} lines`);
    const texts = findItems(root, 'text').filter(it => it.datum?.k === 'line');
    const placed = [];
    for (const r of lines) {
      const drawn = texts.filter(it => it.datum.i === r.i);
      // The text is drawn without its indentation, which is its offset.
      const trimmed = r.text.replace(/^ +/, '');
      const item = drawn.find(it => it.text === trimmed);
      if (trimmed && !item) {
        problems.push(`line ${r.line}'s text is not drawn: ${JSON.stringify(r.text)}`);
        break;
      }
      if (item) placed.push({ lead: r.text.length - trimmed.length, x: item.x, line: r.line });
      if (!drawn.some(it => it.text === String(r.line))) {
        problems.push(`line ${r.line}'s number is not drawn`);
        break;
      }
      const dim = drawn.every(it => it.opacity < 1);
      if (dim !== (r.total === 0)) {
        problems.push(`line ${r.line} (total ${r.total}) is ${dim ? '' : 'not '}dimmed`);
        break;
      }
    }
    // Deeper indentation, further right: x grows with the leading spaces.
    placed.sort((a, b) => a.lead - b.lead);
    const out = placed.find((p, k) => k > 0 && (p.lead > placed[k - 1].lead ? p.x <= placed[k - 1].x
                                                                          : p.x !== placed[k - 1].x));
    if (out) problems.push(`line ${out.line} is drawn at x ${out.x}, out of step with its indentation`);
    return `${lines.length} lines, ${hotLines(spec).length} with samples`;
  }, problems);
}

/* The source of a diff: a bar per line with weight, in its change's
 * colour; each line's text and delta drawn. */
async function checkSourceDiff(spec, problems) {
  await checkView(spec, 'source of a diff', sourceDiffProblem, async view => {
    const changed = changedLines(spec), root = view.scenegraph().root;
    const bars = findItems(root, 'rect').filter(it => it.datum?.k === 'line' || it.datum?.k === 'removed');
    if (bars.length !== changed.length) problems.push(`${bars.length} bars for ${changed.length} lines with weight`);
    const off = bars.filter(it => it.fill !== it.datum.color).length;
    if (off) problems.push(`${off} bars not in their change's colour`);
    const texts = findItems(root, 'text');
    for (const r of changed) {
      const drawn = texts.filter(it => it.datum?.i === r.i).map(it => it.text);
      for (const want of [r.deltas, r.ln, r.change]) {
        if (!drawn.includes(want)) {
          problems.push(`line ${r.ln}: "${want}" is not drawn (${JSON.stringify(drawn)})`);
          return 'failed';
        }
      }
    }
    return `${changed.length} lines with weight, ${spec.usermeta.cflame.removed} removed`;
  }, problems);
}

/* A chart: a rect per bar in its colour, the time axis spanning the
 * range; pushes problems. */
async function checkChart(spec, problems) {
  await checkView(spec, 'chart', chartProblem, async view => {
    const bars = chartBars(spec), meta = spec.usermeta.cflame;
    const rects = findItems(view.scenegraph().root, 'rect').filter(it => it.datum?.t1 !== undefined);
    if (rects.length !== bars.length) problems.push(`vega drew ${rects.length} rects for ${bars.length} bars`);
    const miscoloured = rects.filter(it => it.fill !== it.datum.color).length;
    if (miscoloured) problems.push(`${miscoloured} bars not in their colour`);
    const domain = view.scale('x').domain();
    if (Math.abs(domain[0] - meta.from) > 1e-9 || Math.abs(domain[1] - meta.to) > 1e-9) {
      problems.push(`the time axis spans ${domain}, not ${meta.from}..${meta.to}`);
    }
    return `${bars.length} bars in ${meta.lanes} lanes`;
  }, problems);
}

/* A table view's SVG from its bundle, or null (a problem pushed) when it
 * is missing or not well-formed. */
function tableSvg(doc, view, problems) {
  const svg = svgOf(doc);
  const valid = typeof svg === 'string' ? XMLValidator.validate(svg) : 'no SVG';
  if (valid === true) return svg;
  problems.push(`${view} SVG is not well-formed XML: ${JSON.stringify(valid.err || valid)}`);
  return null;
}

/* A source bundle's SVG and text; pushes problems. */
function checkSourceBundle(doc, problems) {
  const svg = tableSvg(doc, 'source', problems);
  if (!svg) return;
  const titled = (svg.match(/<path\b[^>]*><title>/g) || []).length;
  const want = hotLines(doc[VL_MIME]).length;
  if (titled !== want) problems.push(`source SVG has ${titled} titled bars for ${want} lines with samples`);
  if (!/\n +Self +Self% +Total +Total% +Line +Source\n/.test(doc['text/plain'] || '')) {
    problems.push('source text/plain lacks the table header');
  }
}

/* A top bundle's SVG and text; pushes problems. */
function checkTopBundle(doc, problems) {
  const svg = tableSvg(doc, 'top', problems);
  if (!svg) return;
  const want = expectedTop(doc[VL_MIME], 'self');
  const titles = (svg.match(/<title>([^\n<]*)/g) || []).map(t => unescapeXml(t.slice(7)));
  if (titles.join('\n') !== want.map(r => r.func).join('\n')) {
    problems.push(`top SVG rows ${JSON.stringify(titles.slice(0, 5))}... are not the rows by self`);
  }
  const text = doc['text/plain'] || '';
  if (!/\nBy self:\n/.test(text) || !/\nBy total:\n/.test(text)) {
    problems.push('top text/plain lacks the "By self:" and "By total:" tables');
  }
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
  const spec = doc[VL_MIME] || doc;
  if (viewOf(spec) === 'top' && spec.usermeta.cflame.diff) {
    if (doc[VL_MIME] && !tableSvg(doc, 'top', problems)) return problems;
    await checkTopDiff(spec, problems);
    return problems;
  }
  if (viewOf(spec) === 'top') {
    if (doc[VL_MIME]) checkTopBundle(doc, problems);
    await checkTop(spec, problems);
    return problems;
  }
  if (viewOf(spec) === 'sandwich') {
    if (doc[VL_MIME]) tableSvg(doc, 'sandwich', problems);
    await checkSandwich(spec, problems);
    return problems;
  }
  if (viewOf(spec) === 'chart') {
    if (doc[VL_MIME]) {
      const svg = tableSvg(doc, 'chart', problems);
      const titled = svg ? (svg.match(/<path\b[^>]*><title>/g) || []).length : 0;
      if (svg && titled !== chartBars(spec).length) {
        problems.push(`chart SVG has ${titled} titled bars for ${chartBars(spec).length} bars`);
      }
    }
    await checkChart(spec, problems);
    return problems;
  }
  if (viewOf(spec) === 'source' && spec.usermeta.cflame.diff) {
    if (doc[VL_MIME]) {
      const svg = tableSvg(doc, 'source', problems);
      const titled = svg ? (svg.match(/<path\b[^>]*><title>/g) || []).length : 0;
      if (svg && titled !== changedLines(spec).length) {
        problems.push(`source diff SVG has ${titled} titled bars for ${changedLines(spec).length} lines`);
      }
    }
    await checkSourceDiff(spec, problems);
    return problems;
  }
  if (viewOf(spec) === 'source') {
    if (doc[VL_MIME]) checkSourceBundle(doc, problems);
    await checkSource(spec, problems);
    return problems;
  }
  if (doc[VL_MIME]) {
    const bytes = Buffer.byteLength(JSON.stringify(doc));
    if (bytes >= MAX_BUNDLE_BYTES) problems.push(`bundle is ${bytes} bytes, not under 1 MB`);
    if (typeof doc['text/plain'] !== 'string' || doc['text/plain'].length === 0) {
      problems.push('bundle has no text/plain');
    }
    // Exports and the classic notebook show the SVG in the markdown item
    // (nbconvert 6.5 strips SVG items): one HTML block, so no blank line.
    // It is the only copy. JupyterLab must still pick the Vega-Lite view:
    // nothing it ranks above it (text/html) is there.
    const md = doc['text/markdown'];
    if (typeof md !== 'string' || !md.startsWith('<div') || !md.includes('<svg') || /\n\s*\n/.test(md.trim())) {
      problems.push('text/markdown is not the SVG as one HTML block');
    }
    const svgText = svgOf(doc);
    checkSvg(svgText, framesOf(doc[VL_MIME]) || [], problems);
    if ('image/svg+xml' in doc) problems.push('the bundle holds the SVG twice: image/svg+xml and text/markdown');
    if ('text/html' in doc) problems.push('text/html would outrank the Vega-Lite view in JupyterLab');
    if (isDiff(doc[VL_MIME])) {
      const text = doc['text/plain'] || '', svg = svgText || '';
      if (!/ Delta {2}Change {2}Frame\n/.test(text)) problems.push('diff text/plain has no Delta and Change columns');
      const meta = doc[VL_MIME].usermeta?.cflame?.diff;
      const header = meta?.negate ? 'Only in the target (not drawn):' : 'Vanished (in the baseline only):';
      if (meta?.vanished > 0 && !(svg.includes(`>${header}</text>`) && text.includes(`\n${header}\n`))) {
        problems.push(`diff: the SVG or the text lacks "${header}"`);
      }
    }
    console.log(`  bundle ${bytes} bytes, Vega-Lite ${Buffer.byteLength(JSON.stringify(doc[VL_MIME]))}, ` +
                `SVG ${Buffer.byteLength(svgText || '')} bytes`);
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
