// SPDX-License-Identifier: BSD-3-Clause
// Opens exported notebooks (jupyter nbconvert --to html) in headless Chromium
// and checks that every flame graph in them is drawn, as a reader of the page
// would see it.
//
//   node tests/render/export_test.mjs --graphs N [--width PX] [--screenshot PNG] PAGE.html...
//
// A flame graph on the page is an <svg> with frames: <path> elements that
// carry a <title> (their tooltip; the SVG's own script takes it, see
// interactive.mjs); an <svg> inside another (a sandwich's halves) is part
// of that one. For each page the test asserts:
//   - exactly N flame graphs are on the page (--graphs);
//   - each has at least two frames that the browser lays out with a non-zero
//     width and strokes with a colour and a width, as tall as their level (a
//     graph whose frames an exporter stripped has none),
//     and at least one label (<text>) drawn inside its box;
//   - each fits the width of the output area it sits in (it scales down to
//     it), or, where the page is narrower than its smallest scale, sits in a
//     box that scrolls sideways, so nothing is clipped;
//   - its frames are painted: a screenshot of the graph has more than one
//     colour.
// --width sets the page's width (default 1100 pixels), to try a narrow page.
// The page loads nothing from the network (an export may point at CDNs).
// Exits 0 when every page passes; otherwise prints what failed and exits 1.
import path from 'node:path';

import { launchChromium } from './interactive.mjs';


/* How long a wait for the page may take. Generous: a loaded machine can make
 * Chromium slow, and a wait ends as soon as its condition holds, so a
 * passing run never pays for it. */
const WAIT_MS = 60_000;

const args = process.argv.slice(2);
let graphs = -1, width = 1100, screenshot = null;
const pages = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--graphs') graphs = Number(args[++i]);
  else if (args[i] === '--width') width = Number(args[++i]);
  else if (args[i] === '--screenshot') screenshot = args[++i];
  else pages.push(path.resolve(args[i]));
}
if (graphs < 0 || pages.length === 0) {
  console.error('usage: node export_test.mjs --graphs N [--width PX] [--screenshot PNG] PAGE.html...');
  process.exit(2);
}

const browser = await launchChromium();

/* Distinct colours in a PNG screenshot, sampled. */
async function colours(page, png) {
  return page.evaluate(async b64 => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < d.length && seen.size < 50; i += 4 * 7) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return seen.size;
  }, png.toString('base64'));
}

let failed = 0;
for (const [k, file] of pages.entries()) {
  const problems = [];
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  await page.route(/^(https?|wss?):/, route => route.abort('internetdisconnected'));
  await page.goto('file://' + file, { waitUntil: 'load' });
  const found = await page.evaluate(() => {
    const out = [];
    document.querySelectorAll('svg').forEach((svg, i) => {
      // A picture of two graphs (a sandwich) nests their SVGs in one: that
      // one is the graph.
      if (svg.parentElement && svg.parentElement.closest('svg')) return;
      // A frame has a title, or, once the SVG's script has set it up, the
      // title's text (flame/draw/fl_svg_script.js).
      const titled = [...svg.querySelectorAll('path')].filter(r => r.querySelector('title') || (r.cflame && r.cflame.e === r));
      if (titled.length === 0) return;
      svg.setAttribute('data-export-test', String(i));
      const box = svg.getBoundingClientRect();
      // A frame is a line stroked as tall as its level (fl_svg.c): laid
      // out along x, and as tall as the stroke it is painted with.
      const drawn = titled.filter(r => {
        const b = r.getBoundingClientRect(), style = getComputedStyle(r);
        return b.width > 0 && style.stroke !== 'none' && parseFloat(style.strokeWidth) > 0;
      }).length;
      const labels = [...svg.querySelectorAll('text')].filter(t => {
        const b = t.getBoundingClientRect();
        return t.textContent.trim() && b.width > 0 && b.left >= box.left - 1 && b.right <= box.right + 1;
      }).length;
      // The output area: the nearest ancestor that is a block of its own.
      let area = svg.parentElement;
      while (area && getComputedStyle(area).display === 'inline') area = area.parentElement;
      const abox = area.getBoundingClientRect();
      let scroller = svg.parentElement, scrolls = false;
      for (; scroller && scroller !== document.body; scroller = scroller.parentElement) {
        if (['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX)) {
          scrolls = true;
          break;
        }
      }
      out.push({
        id: String(i),
        frames: titled.length,
        drawn,
        labels,
        width: box.width,
        natural: Number(svg.getAttribute('width')),
        area: abox.width,
        scrolls,
        title: (svg.querySelector('text') || {}).textContent || '',
      });
    });
    return out;
  });
  if (found.length !== graphs) problems.push(`${found.length} flame graphs on the page, expected ${graphs}`);
  for (const g of found) {
    const name = `graph ${JSON.stringify(g.title.slice(0, 40))}`;
    if (g.drawn < 2) problems.push(`${name}: ${g.drawn} of ${g.frames} frames are drawn`);
    if (g.labels < 1) problems.push(`${name}: no label is drawn`);
    if (g.width > g.area + 1 && !g.scrolls) {
      problems.push(`${name}: ${g.width.toFixed(0)} px wide in an area of ${g.area.toFixed(0)} px, clipped`);
    }
    if (g.width > g.natural + 1) problems.push(`${name}: drawn ${g.width} px wide, larger than its ${g.natural}`);
    const el = page.locator(`svg[data-export-test="${g.id}"]`);
    await el.scrollIntoViewIfNeeded();
    const png = await el.screenshot();
    const n = await colours(page, png);
    if (n < 3) problems.push(`${name}: its screenshot has ${n} colours`);
    if (screenshot && g === found[0]) await el.screenshot({ path: screenshot.replace(/\.png$/, `-${k}.png`) });
  }
  await context.close();
  const summary = found.map(g => `${g.drawn}/${g.frames}`).join(', ');
  if (problems.length) {
    failed++;
    console.log(`FAIL ${file} (${width} px): ${problems.join('; ')}`);
  } else {
    console.log(`ok   ${file} (${width} px): ${found.length} graphs drawn, frames ${summary}`);
  }
}
await browser.close();
process.exit(failed ? 1 : 0);
