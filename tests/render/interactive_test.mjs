// SPDX-License-Identifier: BSD-3-Clause
// cflame's interactive SVG in headless Chromium with the network off: an
// SVG file, an HTML page or export, a notebook served by a local server.
//
//   node tests/render/interactive_test.mjs [--graphs N] [--band] [--width PX] [--static | --untrusted] [--source FILE] TARGET...
//
// TARGET is a file or an http://127.0.0.1 URL; every other request is
// refused, as on a machine without a network. The frames' titles, what a
// hovered frame must say, are read from --source (default: the target
// file itself) before any script ran (interactive.mjs). For each target:
//   - every graph works (interactive.mjs, tryGraphs): hover box, click
//     zoom, reset, search and its share, Escape; with --static, where
//     scripts were stripped, the drawing and the hint show instead
//     (staticGraphs); with --untrusted (a classic notebook not trusted),
//     no graph is drawn and N outputs show the text report (its summary
//     line first);
//   - --graphs N: the page holds N graphs;
//   - --band: each graph is too deep for its height, and its band opens;
//   - --width PX: the window's width (default 1,300); every search box is
//     inside the window, where it can be typed in without scrolling;
//   - nothing is thrown by a script of the page, and for a file nothing is
//     logged to the console as an error.
// Exits 0 when every target passes; otherwise prints what failed and exits 1.
import fs from 'node:fs';
import path from 'node:path';

import { launchChromium, staticGraphs, titlesOf, tryGraphs } from './interactive.mjs';

const WAIT_MS = 60_000; /* generous: a wait ends as soon as its condition holds */

const args = process.argv.slice(2);
let graphs, stripped = false, untrusted = false, source = null, band = false, width = 1300;
const targets = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--graphs') graphs = Number(args[++i]);
  else if (args[i] === '--static') stripped = true;
  else if (args[i] === '--band') band = true;
  else if (args[i] === '--width') width = Number(args[++i]);
  else if (args[i] === '--untrusted') untrusted = true;
  else if (args[i] === '--source') source = args[++i];
  else targets.push(args[i]);
}
if (!targets.length) {
  console.error('usage: node interactive_test.mjs [--graphs N] [--static] [--source FILE] TARGET...');
  process.exit(2);
}

const browser = await launchChromium();

let failed = 0;
for (const target of targets) {
  const url = /^https?:/.test(target) ? target : 'file://' + path.resolve(target);
  const titles = untrusted ? [] : titlesOf(fs.readFileSync(source || target, 'utf8'));
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.route(/^(https?|wss?):/, route =>
    /^(https?|wss?):\/\/(127\.0\.0\.1|localhost)[:/]/.test(route.request().url())
      ? route.continue() : route.abort('internetdisconnected'));
  const thrown = [], logged = [];
  page.on('pageerror', err => thrown.push(err.message));
  page.on('console', msg => { if (msg.type() === 'error') logged.push(msg.text()); });
  await page.goto(url, { waitUntil: 'load' });
  const want = graphs === undefined ? 1 : graphs;
  // The report's summary line: samples, or allocations.
  const lead = '^~?[\\d,]+ (samples? every|allocations?)';
  try {
    if (untrusted) {
      await page.waitForFunction(([n, lead]) => [...document.querySelectorAll('pre')]
        .filter(p => new RegExp(lead).test(p.textContent)).length >= n, [want, lead]);
    } else if (!stripped) {
      await page.waitForFunction(n => document.querySelectorAll('svg[data-cflame]').length >= n, want);
    }
  } catch (e) { /* the count is checked below */ }
  // A notebook renders its outputs after load; their scripts run as they
  // are inserted.
  if (!stripped && want) {
    try {
      await page.waitForFunction(() => [...document.querySelectorAll('svg[data-cflame]')]
        .filter(s => !(s.parentElement && s.parentElement.closest('svg[data-cflame]'))).every(s => s.cflame));
    } catch (e) { /* reported by tryGraphs */ }
  }
  let problems;
  if (untrusted) {
    const seen = await page.evaluate(lead => ({
      texts: [...document.querySelectorAll('pre')].filter(p => new RegExp(lead).test(p.textContent)).length,
      drawn: document.querySelectorAll('svg[data-cflame]').length,
    }), lead);
    problems = [];
    if (seen.texts !== want) problems.push(`${seen.texts} text reports, expected ${want}`);
    if (seen.drawn) problems.push(`${seen.drawn} graphs drawn in an untrusted notebook`);
  } else {
    // A notebook's cells, which its shortcuts would change (d d deletes
    // one, a and b add one) if the keys typed in a search box reached them.
    const cells = () => page.evaluate(() => document.querySelectorAll('.cell').length);
    const before = await cells();
    // Every search box is in the window as the page opens, before any
    // other check scrolls it.
    const outside = stripped ? [] : await page.evaluate(() => [...document.querySelectorAll('svg input')]
      .map(i => i.getBoundingClientRect())
      .filter(r => r.left < 0 || r.right > window.innerWidth)
      .map(r => `${Math.round(r.left)}..${Math.round(r.right)} of ${window.innerWidth} px`));
    problems = stripped ? await staticGraphs(page, graphs) : await tryGraphs(page, titles, graphs, band);
    for (const o of outside) problems.push(`a search box lies outside the window: ${o}`);
    if ((await cells()) !== before) problems.push(`the page's cells went from ${before} to ${await cells()} while searching`);
  }
  for (const t of thrown) problems.push(`a script threw: ${t}`);
  if (!/^https?:/.test(target)) for (const l of logged) problems.push(`console error: ${l}`);
  await context.close();
  if (problems.length) {
    failed++;
    console.log(`FAIL ${target}:\n  ${problems.join('\n  ')}`);
  } else {
    console.log(`ok   ${target}: ${untrusted ? 'the text report' : stripped ? 'static, with the hint' : 'hover, zoom, reset, search'}`);
  }
}
await browser.close();
process.exit(failed ? 1 : 0);
