// SPDX-License-Identifier: BSD-3-Clause
// For bench/bench_interactive.py: opens an interactive SVG file in headless
// Chromium (the tests' playwright-core and Debian's chromium, network off)
// RUNS times and prints one JSON line: for each run, the milliseconds from
// navigation to the SVG set up by its script (open_ms), and from a click on
// the widest frame narrower than the plot to the frame zoomed and the next
// frame painted (click_ms), with the number of frames.
//
//   node bench/interactive_open.mjs FILE.svg RUNS
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'tests', 'render', 'node_modules', 'index.js'));
const { chromium } = require('playwright-core');

const [file, runs] = [path.resolve(process.argv[2]), Number(process.argv[3] || 5)];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const out = { open_ms: [], click_ms: [], frames: 0 };
for (let i = 0; i < runs; i++) {
  const context = await browser.newContext({ offline: true });
  const page = await context.newPage();
  await page.goto('file://' + file, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelector('svg').cflame);
  // Navigation start to the end of the first frame painted after set-up.
  out.open_ms.push(await page.evaluate(() => new Promise(r => requestAnimationFrame(() =>
    requestAnimationFrame(() => r(performance.now()))))));
  const r = await page.evaluate(async () => {
    const frames = [...document.querySelectorAll('path')].filter(p => p.cflame && p.cflame.e === p);
    const plot = document.querySelector('svg').getAttribute('data-plot').split(' ').map(Number);
    const pick = frames.filter(p => p.cflame.w < plot[1] - plot[0] - 1).sort((a, b) => b.cflame.w - a.cflame.w)[0];
    const t0 = performance.now();
    pick.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const zoomed = Math.abs(Number(/h([-0-9.e]+)/.exec(pick.getAttribute('d'))[1]) - (plot[1] - plot[0])) < 0.5;
    return { ms: performance.now() - t0, frames: frames.length, zoomed };
  });
  if (!r.zoomed) throw new Error('the click did not zoom');
  out.click_ms.push(r.ms);
  out.frames = r.frames;
  await context.close();
}
await browser.close();
console.log(JSON.stringify(out));
