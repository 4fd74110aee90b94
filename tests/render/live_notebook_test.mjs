// SPDX-License-Identifier: BSD-3-Clause
// Runs a notebook in the classic Notebook (Debian's python3-notebook 6) in
// headless Chromium, and watches its last cell, a %%profview every=S cell,
// as its user would: the graph is redrawn in place while the cell runs, and
// the final graph stays after a save and a reload.
//
//   node tests/render/live_notebook_test.mjs URL
//
// URL: the notebook's page on a running server (with its token). The test
// runs every cell (Cell > Run All), then reads the last cell's output area
// every 50 ms: the "live: T s so far, N samples" line of its graph's SVG
// while the cell runs, and the graph once it has ended. It asserts:
//   - at least two different live graphs were drawn in that output area,
//     one at a time (never two graphs in it), their sample counts growing;
//   - when the cell has ended, the area holds one graph, the final one (no
//     "live:" line), whose header counts at least as many samples as the
//     last live graph did;
//   - saved (File > Save) and the page reloaded, that final graph is there,
//     drawn as before.
// Prints what it saw as JSON; exits 0 when all holds, else prints what
// failed and exits 1.
import { launchChromium } from './interactive.mjs';

/* Nets, not bounds: each wait ends as soon as its condition holds. */
const WAIT_MS = 600_000;

const url = process.argv[2];
if (!url) {
  console.error('usage: live_notebook_test.mjs URL');
  process.exit(2);
}

const failures = [];
const fail = msg => failures.push(msg);
const count = s => Number(s.replace(/,/g, ''));

/* What the last cell's output area shows now. */
function lastCell() {
  const cells = Jupyter.notebook.get_cells();
  const cell = cells[cells.length - 1];
  const area = cell.output_area.element[0];
  const graphs = [...area.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg'));
  const text = graphs.map(g => g.textContent).join('\n');
  const live = text.match(/live: ([\d.]+) s so far, ([\d,]+) samples?/);
  const header = text.match(/([\d,]+) samples? every [\d.]+ (?:ms|ns) of CPU/);
  return {
    graphs: graphs.length,
    live: live ? live[0] : null,
    samples: live ? live[2] : header ? header[1] : null,
    header: header ? header[0] : null,
    running: cell.element[0].classList.contains('running'),
    errors: cell.output_area.outputs.filter(o => o.output_type === 'error').map(o => o.evalue),
  };
}

const browser = await launchChromium();
const page = await browser.newPage();
// Offline, as a notebook on a laptop on a train: nothing but the server.
await page.route('**/*', route => {
  const u = new URL(route.request().url());
  return u.hostname === '127.0.0.1' ? route.continue() : route.abort();
});
const seen = [];
let final = null, reloaded = null;
try {
  await page.goto(url);
  await page.waitForFunction(
    () => window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded &&
      Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected(), null, { timeout: WAIT_MS });
  await page.evaluate(() => Jupyter.notebook.execute_all_cells());
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const s = await page.evaluate(lastCell);
    if (s.errors.length) {
      fail(`the cell failed: ${s.errors.join('; ')}`);
      break;
    }
    if (s.graphs > 1) fail(`${s.graphs} graphs in the output area at once`);
    if (s.live && (!seen.length || seen[seen.length - 1] !== s.live)) seen.push(s.live);
    if (!s.running && s.graphs && !s.live) {
      final = s;
      break;
    }
    if (Date.now() > deadline) {
      fail(`the cell did not end with a final graph: ${JSON.stringify(s)}`);
      break;
    }
    await new Promise(r => setTimeout(r, 50));
  }
  const liveCounts = seen.map(l => count(l.match(/([\d,]+) samples?$/)[1]));
  if (seen.length < 2) fail(`fewer than two live graphs were drawn: ${JSON.stringify(seen)}`);
  for (let i = 1; i < liveCounts.length; i++)
    if (liveCounts[i] < liveCounts[i - 1]) fail(`a live graph held fewer samples than the one before: ${seen}`);
  if (final) {
    if (final.graphs !== 1) fail(`the ended cell shows ${final.graphs} graphs`);
    if (!final.header) fail('the final graph has no header');
    else if (liveCounts.length && count(final.samples) < liveCounts[liveCounts.length - 1])
      fail(`the final graph (${final.header}) holds fewer samples than the last live one`);
    await page.evaluate(() => Jupyter.notebook.save_notebook());
    await page.waitForFunction(() => !Jupyter.notebook.dirty, null, { timeout: WAIT_MS });
    await page.reload();
    await page.waitForFunction(
      () => window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded, null,
      { timeout: WAIT_MS });
    reloaded = await page.evaluate(lastCell);
    if (reloaded.graphs !== 1 || reloaded.live || reloaded.header !== final.header)
      fail(`after a save and a reload the cell shows ${JSON.stringify(reloaded)}, not the final ` +
           `graph (${final.header})`);
  }
} catch (e) {
  fail(String(e));
} finally {
  await browser.close();
}
console.log(JSON.stringify({ live: seen, final: final && final.header,
                             reloaded: reloaded && reloaded.header }));
if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
