// SPDX-License-Identifier: BSD-3-Clause
// cflame's speedscope and trace-event files in speedscope itself.
//
//   node tests/render/speedscope_test.mjs CFLAME_BINARY
//
// Writes `perf script` text of two threads whose phases follow one another
// in time (thread 100: phase_a, phase_b, phase_a again; thread 101:
// phase_c), has the cflame binary write it as speedscope (-f speedscope)
// and as trace events (-f trace), and checks:
//   - the speedscope file against speedscope's own JSON schema (the
//     package's file-format-schema.json, with ajv);
//   - both files in speedscope's offline build (the package's index.html
//     from file://, the profile handed over as its `speedscope` command
//     hands it, #localProfilePath=), in Debian's headless Chromium with
//     the network off: a profile per thread named as cflame names the
//     thread; in its Sandwich table each function's total and self as
//     cflame's own top view of that thread counts them (ms: the interval
//     is 1 ms); and, hovering along the phases' row of its Time Order
//     chart, the phases in the order and with the lengths of cflame's
//     time chart (`--view chart -f text`).
// Exits 0 when every check passes; otherwise prints what failed and exits 1.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv';

import { launchChromium } from './interactive.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const release = path.join(here, 'node_modules/speedscope/dist/release');
const WAIT_MS = 60_000;

const [cflame] = process.argv.slice(2);
if (!cflame) {
  console.error('usage: node speedscope_test.mjs CFLAME_BINARY');
  process.exit(2);
}

const failures = [];
function check(cond, what) {
  if (!cond) failures.push(what);
  return cond;
}

/* The capture: a sample a millisecond, each thread's phases in turn. */
const phases = { 100: [['phase_a', 20, 'spin'], ['phase_b', 10], ['phase_a', 5]],
                 101: [['phase_c', 15]] };
const lines = [];
for (const [tid, list] of Object.entries(phases)) {
  let t = 1;
  for (const [phase, n, leaf] of list)
    for (let i = 0; i < n; i++) {
      t += 0.001;
      lines.push(`prog 100/${tid} ${t.toFixed(6)}: 1000000 cpu-clock:`);
      const stack = ['main', phase, ...(leaf ? [leaf] : [])].reverse();
      stack.forEach((f, k) => lines.push(`\t${(0x401000 + 16 * k).toString(16)} ${f}+0x10 (/tmp/prog)`));
      lines.push('');
    }
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cflame-speedscope-'));
const capture = path.join(dir, 'p.perf');
fs.writeFileSync(capture, lines.join('\n') + '\n');
const run = (...args) => execFileSync(cflame, [capture, ...args]).toString();
const files = { speedscope: path.join(dir, 'p.speedscope.json'), trace: path.join(dir, 'p.trace.json') };
run('-o', files.speedscope);
run('-o', files.trace);

/* cflame's own views: per thread, its label, its phases in time order
 * (the chart's bars at depth 3: prog, main, phase) and each function's
 * total and self (the top view's text). */
function cflameThreads() {
  const chart = run('--view', 'chart', '-f', 'text');
  const threads = [];
  for (const block of chart.split('\n\n').slice(1)) {
    const [label, , ...bars] = block.trim().split('\n');
    const m = /^thread (\d+): (\S+) \(([\d,]+) samples\)$/.exec(label);
    if (!check(m, `chart lane label "${label}"`)) continue;
    const order = bars.map(b => /^\s*[\d.]+\s+[\d.]+\s+([\d,]+)  (\s*)(\S+)$/.exec(b))
      .filter(b => b && b[2].length === 4).map(b => [b[3], Number(b[1].replace(/,/g, ''))]);
    const top = {};
    for (const row of run('--threads', m[1], '--view', 'top', '-f', 'text').split('\n')) {
      const r = /^\s*([\d,]+)\s+[\d.]+%\s+[\d.]+%\s+([\d,]+)\s+[\d.]+%\s+(\S+)/.exec(row);
      if (r) top[r[3]] = [Number(r[2].replace(/,/g, '')), Number(r[1].replace(/,/g, ''))];
    }
    check(Object.keys(top).length >= 3, `cflame's top view of thread ${m[1]}: ${JSON.stringify(top)}`);
    threads.push({ tid: m[1], name: `thread ${m[1]}: ${m[2]}`, total: Number(m[3].replace(/,/g, '')), order, top });
  }
  return threads;
}
const want = cflameThreads();
check(want.length === 2, `cflame's chart has ${want.length} lanes, not 2`);

/* The schema check. */
const ajv = new Ajv({ strict: false, allErrors: true });
const schema = JSON.parse(fs.readFileSync(path.join(release, 'file-format-schema.json')));
const valid = ajv.compile(schema);
check(valid(JSON.parse(fs.readFileSync(files.speedscope))),
      `the speedscope file breaks speedscope's schema: ${ajv.errorsText(valid.errors)}`);

/* What the page shows under its toolbar: the hover's text, a profile's name. */
const shown = page => page.evaluate(() => document.body.innerText);
const hoverText = async page => (await shown(page)).split('\n').slice(3).join(' ').trim();

/* Opens file in speedscope, offline; the page and the URLs it asked for. */
async function open(browser, file) {
  const js = path.join(dir, `${path.basename(file)}.js`);
  fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(path.basename(file))}, ` +
                       `${JSON.stringify(fs.readFileSync(file).toString('base64'))})`);
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  const asked = [], errors = [];
  page.on('pageerror', e => errors.push(e.message));
  await page.route(/^(https?|wss?):/, route => {
    asked.push(route.request().url());
    return route.abort('internetdisconnected');
  });
  await page.goto(`file://${path.join(release, 'index.html')}#localProfilePath=${js}`);
  await page.waitForFunction(() => /\(1\/\d+\)/.test(document.body.innerText), null, { timeout: WAIT_MS });
  return { page, asked, errors };
}

/* The Time Order chart's frames at x: the hover's text at each row, top
 * down ("20.00ms (57%) phase_a"), from the chart's first row. */
async function column(page, x) {
  const rows = [];
  for (let y = 100; y < 600; y += 5) {
    await page.mouse.move(x, y);
    const t = await hoverText(page);
    if (t && t !== (rows.at(-1) || {}).text) rows.push({ y, text: t });
  }
  return rows;
}

/* Hovering along row y: each frame met, with its length, in order. */
async function along(page, y) {
  const seen = [];
  for (let x = 2; x < 1000; x += 7) {
    await page.mouse.move(x, y);
    const m = /^([\d.]+)ms \(\S+\) (\S+)$/.exec(await hoverText(page));
    if (m && (!seen.length || seen.at(-1)[0] !== m[2] || seen.at(-1)[2] !== x - 7))
      seen.push([m[2], Number(m[1]), x]);
    else if (m) seen.at(-1)[2] = x;
  }
  return seen.map(([name, ms]) => [name, ms]);
}

/* The Sandwich table: function -> [total, self] in ms. Its rows are
 * waited for, not only its header: on a busy machine they come later. */
async function sandwich(page) {
  await page.keyboard.press('3');
  await page.waitForFunction(() => /Symbol Name/.test(document.body.innerText) &&
                                   /[\d.]+ms \(\S+\)\s+[\d.]+(ms|ns) \(\S+\)\s+\S/.test(document.body.innerText),
                             null, { timeout: WAIT_MS });
  const text = await shown(page);
  const rows = {};
  const re = /([\d.]+)ms \(\S+\)\s+([\d.]+)(ms|ns) \(\S+\)\s+(\S+)/g;
  for (let m; (m = re.exec(text));) rows[m[4]] = [Number(m[1]), m[3] === 'ms' ? Number(m[2]) : 0];
  await page.keyboard.press('1');
  return rows;
}

async function checkFile(browser, format) {
  const { page, asked, errors } = await open(browser, files[format]);
  for (let i = 0; i < want.length; i++) {
    const w = want[i];
    const header = (await shown(page)).split('\n')[1];
    /* speedscope names a trace's threads by their thread_name events */
    check(header.startsWith(w.name) && header.endsWith(`(${i + 1}/${want.length})`),
          `${format}: profile ${i + 1} is "${header}", not cflame's "${w.name}"`);
    const rows = await column(page, 20);
    const phaseRow = rows.find(r => /phase_/.test(r.text));
    if (check(phaseRow, `${format}, ${w.name}: no phase in the Time Order chart (${JSON.stringify(rows)})`)) {
      const got = await along(page, phaseRow.y + 1);
      if (!got.length) console.error(format, JSON.stringify(rows));
      check(JSON.stringify(got) === JSON.stringify(w.order),
            `${format}, ${w.name}: Time Order shows ${JSON.stringify(got)}, cflame's chart ${JSON.stringify(w.order)}`);
    }
    const table = await sandwich(page);
    check(table.prog && table.prog[0] === w.total,
          `${format}, ${w.name}: the thread's total is ${JSON.stringify(table.prog)} ms, cflame's ${w.total} samples of 1 ms`);
    for (const [func, [total, self]] of Object.entries(w.top))
      check(table[func] && table[func][0] === total && table[func][1] === self,
            `${format}, ${w.name}: ${func} is ${JSON.stringify(table[func])} ms in speedscope's Sandwich, ` +
            `[${total}, ${self}] in cflame's top view`);
    await page.keyboard.press('n');
    /* The next profile is shown once the header says so. */
    if (i + 1 < want.length)
      await page.waitForFunction(n => document.body.innerText.includes(n), `(${i + 2}/${want.length})`,
                                 { timeout: WAIT_MS });
  }
  check(asked.length === 0, `${format}: speedscope asked the network for ${asked.join(', ')}`);
  check(errors.length === 0, `${format}: the page threw ${errors.join('; ')}`);
  await page.close();
}

const browser = await launchChromium();
try {
  await checkFile(browser, 'speedscope');
  await checkFile(browser, 'trace');
} finally {
  await browser.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log(`speedscope: both files open in speedscope ${JSON.parse(fs.readFileSync(path.join(release, '../../package.json'))).version} and agree with cflame's views`);
