// SPDX-License-Identifier: BSD-3-Clause
// The standalone page of `cflame --format html` in a real browser.
//
//   node tests/render/html_page_test.mjs CFLAME_BINARY PERF_SCRIPT_TEXT
//
// Makes two pages with the cflame binary (a profile of the capture, and its
// diff against itself) and opens each in Debian's Chromium, headless
// (/usr/bin/chromium, or $CHROMIUM). A page has a tab per view that can
// draw its profile: the profile's are flame, icicle, callers, top, source
// and chart, the diff's flame, icicle, callers, top and source; the flame
// graph's tab is shown first. The page needs no network; each is opened two ways:
//   - with the network off: the page asks nothing of the network; every
//     tab's SVG is interactive by itself (interactive.mjs: hover box, click
//     zoom, reset, search and its share, Escape), its note is hidden, the
//     flame graph has one frame per row of the spec the page carries, and
//     no script throws or logs an error;
//   - JavaScript off: the SVG shows with its titles, and the note says what
//     the interactive view needs; clicking another tab shows that view's
//     SVG and hides the first.
// Exits 0 when every check passes; otherwise prints what failed and exits 1.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';


import { framesOf } from './frames.mjs';
import { launchChromium, titlesOf, tryGraphs } from './interactive.mjs';

/* How long a wait for the page may take. Generous: a loaded machine can make
 * Chromium slow, and a wait ends as soon as its condition holds, so a
 * passing run never pays for it. */
const WAIT_MS = 60_000;

const [cflame, capture] = process.argv.slice(2);
if (!cflame || !capture) {
  console.error('usage: node html_page_test.mjs CFLAME_BINARY PERF_SCRIPT_TEXT');
  process.exit(2);
}

class Failure extends Error {}
function check(cond, what) {
  if (!cond) throw new Failure(what);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cflame-html-'));
function makePage(name, args, tabs) {
  const file = path.join(dir, `${name}.html`);
  execFileSync(cflame, ['--format', 'html', ...args, '-o', file]);
  const spec = JSON.parse(execFileSync(cflame, ['--format', 'vegalite', ...args]).toString());
  return { name, file, rows: framesOf(spec), spec, tabs };
}

/* The page's tabs, in order. */
function tabsOf(page) {
  return page.evaluate(() => [...document.querySelectorAll('.cflame-tabs > input')]
    .map(i => i.id.replace('cflame-tab-', '')));
}

/* What the static part of view's panel shows (the flame graph's). */
async function staticView(page, view = 'flame') {
  return page.evaluate(view => {
    const panel = document.getElementById(`cflame-panel-${view}`);
    const stat = panel.querySelector('.cflame-static'), note = panel.querySelector('.cflame-hint');
    const box = stat.querySelector('svg')?.getBoundingClientRect();
    return {
      svgShown: !!box && box.width > 100 && box.height > 50 &&
        getComputedStyle(stat).display !== 'none' && getComputedStyle(panel).display !== 'none',
      titledFrames: stat.querySelectorAll('svg path > title').length,
      frames: [...stat.querySelectorAll('svg path')].filter(p => p.cflame && p.cflame.e === p).length,
      spec: JSON.parse(panel.querySelector('script.cflame-spec').textContent),
      note: note.textContent,
      noteShown: getComputedStyle(note).display !== 'none',
    };
  }, view);
}

async function offline(browser, p) {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  const asked = [];
  await page.route(/^(https?|wss?):/, route => {
    asked.push(route.request().url());
    return route.abort('internetdisconnected');
  });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto('file://' + p.file, { waitUntil: 'load' });
  const v = await staticView(page);
  check(asked.length === 0, `offline: the page asked the network for ${asked.join(', ')}`);
  check(v.svgShown, 'offline: the SVG is not shown');
  check(v.frames === p.rows.length, `offline: ${v.frames} frames for ${p.rows.length} rows`);
  check(JSON.stringify(framesOf(v.spec)) === JSON.stringify(p.rows), 'offline: the page\'s spec is not the view\'s');
  check(!v.noteShown, `offline: the note still shows: "${v.note}"`);
  const problems = await tryGraphs(page, titlesOf(fs.readFileSync(p.file, 'utf8')), p.tabs.length);
  check(problems.length === 0, `offline: ${problems.join('; ')}`);
  check(errors.length === 0, `offline: page errors ${errors.join(' | ')}`);
  await context.close();
}

async function noScript(browser, p) {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.goto('file://' + p.file, { waitUntil: 'load' });
  const v = await staticView(page);
  check(v.svgShown, 'JavaScript off: the SVG is not shown');
  check(v.titledFrames === p.rows.length, `JavaScript off: ${v.titledFrames} titled frames`);
  check(v.noteShown && /turn JavaScript on/.test(v.note), `JavaScript off: the note says "${v.note}"`);
  const tabs = await tabsOf(page);
  check(JSON.stringify(tabs) === JSON.stringify(p.tabs), `JavaScript off: tabs ${tabs}, not ${p.tabs}`);
  // Another tab, by CSS alone: its SVG shows, the flame graph's does not.
  const other = tabs[tabs.length - 1];
  await page.click(`label[for=cflame-tab-${other}]`);
  const o = await staticView(page, other), f = await staticView(page);
  check(o.svgShown && !f.svgShown, `JavaScript off: the ${other} tab does not show its view alone`);
  await context.close();
}

const pages = [makePage('graph', [capture], ['flame', 'icicle', 'callers', 'top', 'source', 'chart']),
               makePage('diff', ['--diff', capture, capture],
                        ['flame', 'icicle', 'callers', 'top', 'source'])];
const browser = await launchChromium();
let failed = 0, passed = 0;
try {
  for (const p of pages) {
    for (const [what, fn] of [['offline', offline], ['JavaScript off', noScript]]) {
      try {
        await fn(browser, p);
        passed++;
        console.log(`${p.name}.html ${what}: ok (${p.rows.length} frames)`);
      } catch (e) {
        failed++;
        console.log(`${p.name}.html ${what}: FAIL ${e instanceof Failure ? e.message : e.stack}`);
      }
    }
  }
} finally {
  await browser.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
