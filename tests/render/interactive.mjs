// SPDX-License-Identifier: BSD-3-Clause
// Tries cflame's interactive SVG (flame/draw/fl_svg_script.js) in a page, as a
// reader would: the checks that tests of every front end share.
//
// titlesOf(text) reads, from the file a page was made of (an SVG, an HTML
// page or export, a notebook), each frame's title by its path's d, before
// any script ran: what a frame must say when hovered.
//
// tryGraphs(page, titles, expectGraphs, band) finds the outermost SVGs marked data-cflame and,
// in each, checks that:
//   - the script set it up (it took the <title>s out and added the band of
//     controls) and hid the static hint beside it, if any;
//   - hovering a frame (the widest that is not the whole plot; a table's
//     first row) shows a box inside the SVG whose lines are the frame's
//     title (a line too long for the SVG wrapped: its parts are tspans of
//     class cflame-more; a title too tall cut, ending in an ellipsis), and
//     outlines the frame;
//   - clicking it (a graph or a chart) makes it as wide as the plot, and
//     labels stay inside their frames; Reset zoom and a double-click both
//     bring every frame back to its place;
//   - typing its name in the search box, key by key, dims the frames whose names do not
//     hold it and shows the matched share: the sum of the percents in the
//     titles of the matched frames that no matched frame of the same lane
//     (a chart's thread) contains, as the titles and places read from the
//     file give it;
//   - Escape in the box clears the search;
//   - a graph too deep for its height has a band (with band, every graph
//     must) that says how many levels it holds, and a click opens it
//     (tryBand).
// staticGraphs(page) checks the opposite, for a page whose scripts were
// stripped: a hint of where the interactive view is shows for each graph,
// no script set one up, and what is left of a drawing keeps its titles.
// Each returns a list of problems (empty: all good). launchChromium starts
// the browser they run in.

import { chromium } from 'playwright-core';

/* Debian's Chromium (or $CHROMIUM), headless, with nothing of its own on
 * the network: the browser every test of a page runs. */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/* XML text to text. */
function unescape(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'").replace(/&apos;/g, "'").replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#([0-9]+);/g, (_, d) => String.fromCodePoint(Number(d))).replace(/&amp;/g, '&');
}

/* For each graph of text (SVG markup, raw or inside an HTML page; a
 * notebook's JSON is read for its markdown outputs), in order: d -> title
 * of its titled paths. A graph runs from one outermost <svg xmlns= to the
 * next (the halves of a sandwich are <svg x=...> inside it); the first
 * title wins where two frames share a d (a sandwich's halves). */
export function titlesOf(text) {
  let markup = text;
  if (text.trimStart().startsWith('{')) {
    const nb = JSON.parse(text);
    markup = nb.cells.flatMap(c => c.outputs || [])
      .map(o => [].concat(o.data?.['text/markdown'] || []).join('')).join('\n');
  }
  return markup.split(/(?=<svg xmlns=)/).filter(c => c.startsWith('<svg xmlns=')).map(svg => {
    const titles = new Map();
    const re = /<path\b[^>]*?\bd=['"]([^'"]*)['"][^>]*><title>([^<]*)<\/title>/g;
    for (let m; (m = re.exec(svg));) if (!titles.has(m[1])) titles.set(m[1], unescape(m[2]));
    return titles;
  });
}

/* The frames of the outermost cflame SVGs, as the page lays them out. */
async function graphsOf(page) {
  return page.evaluate(() => {
    const out = [];
    document.querySelectorAll('svg[data-cflame]').forEach((svg, i) => {
      if (svg.parentElement && svg.parentElement.closest('svg[data-cflame]')) return;
      svg.setAttribute('data-try', String(i));
      out.push({ id: String(i), kind: svg.getAttribute('data-cflame'), ready: !!svg.cflame,
                 band: !!svg.querySelector('path.cflame-band'),
                 titles: svg.querySelectorAll('path > title').length,
                 hint: [...(svg.parentElement?.querySelectorAll('.cflame-hint') || [])]
                   .some(h => h.getBoundingClientRect().height > 0 && getComputedStyle(h).display !== 'none') });
    });
    return out;
  });
}

/* Each frame of graph id: its d now, the d and title it had, its lane, its
 * plot's extent, and its box on the screen. */
async function framesOf(page, id) {
  return page.evaluate(id => {
    const svg = document.querySelector(`svg[data-try="${id}"]`);
    return [...svg.querySelectorAll('path')].filter(p => p.cflame && p.cflame.e === p).map(p => {
      const f = p.cflame, b = p.getBoundingClientRect(), owner = p.ownerSVGElement;
      const plot = ((owner.closest('svg[data-plot]') || svg).getAttribute('data-plot') || '').split(' ').map(Number);
      return { d: p.getAttribute('d'), d0: f.d, text: f.text, w: f.w, x: f.x, y: f.y, band: p.classList.contains('cflame-band'),
               lane: (f.text.split('\n').find(l => /^thread /.test(l)) || '') + '@' + (owner === svg ? '' : owner.getAttribute('y')),
               opacity: getComputedStyle(p).opacity, plot,
               box: { x: b.x, y: b.y, w: b.width, h: b.height } };
    });
  }, id);
}

/* What graph id shows of its band: each piece (its box, and the name of
 * its frame), the labels' texts, and the other frames displayed. */
async function bandOf(page, id) {
  return page.evaluate(id => {
    const svg = document.querySelector(`svg[data-try="${id}"]`);
    const box = e => { const b = e.getBoundingClientRect(); return { x: b.x, y: b.y, w: b.width, h: b.height }; };
    // Which plot: a sandwich's halves are nested svgs.
    const plot = e => e.ownerSVGElement === svg ? '' : e.ownerSVGElement.getAttribute('y');
    return {
      pieces: [...svg.querySelectorAll('path.cflame-band')].map(p => ({ box: box(p), name: p.cflame.name, plot: plot(p) })),
      labels: [...svg.querySelectorAll('g[pointer-events=none] > text')].map(t => t.textContent),
      shown: [...svg.querySelectorAll('path:not(.cflame-band)')].filter(p => p.cflame && p.cflame.e === p && getComputedStyle(p).display !== 'none')
        .map(p => ({ name: p.cflame.name, box: box(p), plot: plot(p) })),
    };
  }, id);
}

const MORE = /^\u2026 ([0-9,]+)(?: more levels(?: \(click to open\))?)?$/;

/* A graph too deep for its height: its band (frames of the class
 * cflame-band) says how many levels it holds; hovering a piece says so too;
 * a click on the widest piece opens it: its frame is drawn and labelled at
 * the plot's root level, frames not drawn before are, and what is still too
 * deep is a band of fewer levels; Reset zoom brings the band back. */
async function tryBand(page, svg, id, name, problems) {
  await page.evaluate(id => {
    const pieces = [...document.querySelector(`svg[data-try="${id}"]`).querySelectorAll('path.cflame-band')];
    pieces.sort((a, b) => b.getBoundingClientRect().width - a.getBoundingClientRect().width)[0].scrollIntoView({ block: 'center' });
  }, id);
  const before = await bandOf(page, id);
  const piece = before.pieces.sort((a, b) => b.box.w - a.box.w)[0];
  const more = before.labels.map(l => MORE.exec(l)).filter(Boolean).map(m => Number(m[1].replace(/,/g, '')));
  if (!piece || !more.length) { problems.push(`${name}: no band piece labelled with its levels`); return; }
  const at = { x: piece.box.x + piece.box.w / 2, y: piece.box.y + piece.box.h / 2 };
  await page.mouse.move(at.x, at.y);
  const said = await svg.locator('.cflame-box tspan').first().textContent();
  if (!MORE.test(said)) problems.push(`${name}: hovering the band says ${JSON.stringify(said)}`);
  const own = before.shown.filter(f => f.plot === piece.plot);
  const rootY = Math.max(...own.map(f => f.box.y)), rootTop = Math.min(...own.map(f => f.box.y));
  await page.mouse.click(at.x, at.y);
  const after = await bandOf(page, id);
  const opened = after.shown.find(f => f.name === piece.name && f.plot === piece.plot);
  const icicle = piece.box.y > rootY;
  if (!opened) problems.push(`${name}: the band's ${piece.name} is not drawn once opened`);
  else if (Math.abs(opened.box.y - (icicle ? rootTop : rootY)) > 1)
    problems.push(`${name}: ${piece.name} opened at y ${opened.box.y}, not at the root's level ${icicle ? rootTop : rootY}`);
  if (!after.labels.includes(piece.name)) problems.push(`${name}: ${piece.name} is not labelled once opened`);
  const fresh = after.shown.filter(f => !before.shown.some(g => g.name === f.name)).length;
  if (!fresh) problems.push(`${name}: opening the band draws no frame that was not drawn`);
  const left = after.labels.map(l => MORE.exec(l)).filter(Boolean).map(m => Number(m[1].replace(/,/g, '')));
  if (left.some(n => n >= Math.max(...more))) problems.push(`${name}: the band still holds ${Math.max(...left)} levels once opened`);
  await svg.locator('.cflame-reset').click();
  const back = await bandOf(page, id);
  if (back.pieces.length !== before.pieces.length) problems.push(`${name}: Reset zoom does not bring the band back`);
}

/* The first percent in a title. */
function pctOf(text) {
  const m = /\(([-0-9.e+]+)%\)/.exec(text);
  return m ? Number(m[1]) : 0;
}

/* The share the search must show: the matched frames' percents, less
 * those a matched frame of the lane contains. */
function expectedShare(frames, kind, q) {
  const hit = frames.filter(f => f.text.split('\n')[0].toLowerCase().includes(q.toLowerCase()));
  let sum = 0;
  for (const [i, f] of hit.entries()) {
    // Of two frames as wide as each other, one in the other (a caller
    // whose whole time is in its callee), the first counts.
    const inside = kind !== 'table' && hit.some((g, j) => j !== i && g.lane === f.lane && g.y !== f.y
      && g.x <= f.x + 0.2 && f.x + f.w <= g.x + g.w + 0.2 && (g.w > f.w + 0.01 || j < i));
    if (!inside) sum += pctOf(f.text);
  }
  return sum;
}

export async function tryGraphs(page, allTitles, expectGraphs, band = false) {
  const problems = [];
  const graphs = await graphsOf(page);
  if (allTitles.length !== graphs.length)
    problems.push(`${graphs.length} graphs on the page, ${allTitles.length} in the file they come from`);
  if (expectGraphs !== undefined && graphs.length !== expectGraphs)
    problems.push(`${graphs.length} interactive graphs on the page, expected ${expectGraphs}`);
  for (const [k, g] of graphs.entries()) {
    const name = `graph ${g.id} (${g.kind})`, titles = allTitles[k] || new Map();
    if (!g.ready) { problems.push(`${name}: its script did not set it up`); continue; }
    if (g.titles) problems.push(`${name}: ${g.titles} <title>s left, which the browser would show as well`);
    if (g.hint) problems.push(`${name}: the static hint still shows`);
    const svg = page.locator(`svg[data-try="${g.id}"]`);
    // A page's views are tabs: show this one's.
    const tab = await page.evaluate(id => document.querySelector(`svg[data-try="${id}"]`)
      .closest('.cflame-panel')?.id.replace('cflame-panel-', 'cflame-tab-'), g.id);
    if (tab) await page.locator(`label[for="${tab}"]`).click();
    await svg.scrollIntoViewIfNeeded();
    let frames = await framesOf(page, g.id);
    for (const f of frames) {
      if (titles.get(f.d0) !== f.text) {
        problems.push(`${name}: frame ${f.d0} says ${JSON.stringify(f.text.slice(0, 60))}, its title ${JSON.stringify((titles.get(f.d0) || '').slice(0, 60))}`);
        break;
      }
    }
    if (!frames.length) continue; /* a table without rows: nothing to try */
    // The widest frame narrower than its plot (else the last, in a graph
    // of one stack; else, where every frame is a few pixels wide, as a
    // chart of many short runs can be, the widest that a pointer can
    // still hit); a table's first row.
    const zooms = g.kind !== 'table';
    let pick = zooms
      ? frames.filter(f => f.w < f.plot[1] - f.plot[0] - 1 && f.box.w > 4 && !f.band).sort((a, b) => b.w - a.w)[0]
        || frames.filter(f => f.box.w > 4 && !f.band).pop()
        || frames.filter(f => f.box.w >= 1 && !f.band).sort((a, b) => b.box.w - a.box.w)[0]
      : frames.sort((a, b) => a.y - b.y)[0];
    if (!pick) { problems.push(`${name}: no frame to try`); continue; }
    // A graph taller than the window: the frame in view, and its box anew.
    await page.evaluate(([id, d]) => [...document.querySelector(`svg[data-try="${id}"]`).querySelectorAll('path')]
      .find(p => p.cflame && p.cflame.d === d).scrollIntoView({ block: 'center' }), [g.id, pick.d0]);
    pick = (await framesOf(page, g.id)).find(f => f.d0 === pick.d0);
    const at = { x: pick.box.x + pick.box.w / 2, y: pick.box.y + pick.box.h / 2 };
    await page.mouse.move(at.x, at.y);
    const hover = await page.evaluate(id => {
      const svg = document.querySelector(`svg[data-try="${id}"]`), box = svg.querySelector('.cflame-box');
      const outline = [...svg.querySelectorAll('rect')].find(r => r.getAttribute('visibility') === 'visible');
      const b = box.getBoundingClientRect(), s = svg.getBoundingClientRect();
      return { shown: box.getAttribute('visibility') === 'visible',
               lines: [...box.querySelectorAll('tspan')].reduce((ls, t) => {
                 if (t.getAttribute('class') === 'cflame-more' && ls.length) ls[ls.length - 1] += t.textContent;
                 else ls.push(t.textContent);
                 return ls;
               }, []),
               inside: b.left >= s.left - 1 && b.right <= s.right + 1 && b.top >= s.top - 1 && b.bottom <= s.bottom + 1,
               outlined: !!outline };
    }, g.id);
    const want = titles.get(pick.d0) || '';
    if (!hover.shown) problems.push(`${name}: hovering ${pick.d0} shows no box`);
    else if (hover.lines.join('\n') !== want && !(hover.lines.join('\n').endsWith('\u2026')
                                                  && want.startsWith(hover.lines.join('\n').slice(0, -1))))
      problems.push(`${name}: the box says ${JSON.stringify(hover.lines.join('\n'))}, the title ${JSON.stringify(want)}`);
    if (hover.shown && !hover.inside) problems.push(`${name}: the box lies outside the SVG`);
    if (!hover.outlined) problems.push(`${name}: the hovered frame is not outlined`);
    if (zooms) {
      await page.mouse.click(at.x, at.y);
      frames = await framesOf(page, g.id);
      const zoomed = frames.find(f => f.d0 === pick.d0);
      const m = /h([-0-9.e]+)/.exec(zoomed.d), width = pick.plot[1] - pick.plot[0];
      if (!m || Math.abs(Number(m[1]) - width) > 0.5)
        problems.push(`${name}: clicked ${pick.d0}, now ${zoomed.d}, not the plot's width ${width}`);
      const labels = await page.evaluate(id => {
        const svg = document.querySelector(`svg[data-try="${id}"]`);
        const s = svg.getBoundingClientRect();
        // The frames' labels: the hover box (hidden now) is no label.
        return [...svg.querySelectorAll('g[pointer-events=none]:not(.cflame-box) > text')].filter(t => {
          const b = t.getBoundingClientRect();
          return b.width > 0 && (b.left < s.left - 1 || b.right > s.right + 1);
        }).length;
      }, g.id);
      if (labels) problems.push(`${name}: ${labels} labels outside the graph after the zoom`);
      await svg.locator('.cflame-reset').click();
      frames = await framesOf(page, g.id);
      const moved = frames.filter(f => f.d !== f.d0).length;
      if (moved) problems.push(`${name}: ${moved} frames not back in place after Reset zoom`);
      await page.mouse.click(at.x, at.y);
      await page.mouse.dblclick(at.x, at.y);
      frames = await framesOf(page, g.id);
      if (frames.some(f => f.d !== f.d0)) problems.push(`${name}: a double-click does not reset the zoom`);
    }
    if (band && !g.band) problems.push(`${name}: no band, though the graph is too deep for its height`);
    if (zooms && g.band) await tryBand(page, svg, g.id, name, problems);
    const q = pick.text.split('\n')[0].slice(0, 12);
    const input = svg.locator('input');
    // Typed key by key, as a reader types: a page's own shortcuts (the
    // classic notebook's) must not see the keys.
    await input.click();
    await page.keyboard.type(q);
    frames = await framesOf(page, g.id);
    const share = await svg.locator('.cflame-share').textContent();
    const shown = share.match(/[-0-9.]+(?=%)/g) || [];
    const byPlot = new Map();
    for (const f of frames) {
      const k = f.lane.split('@')[1];
      byPlot.set(k, [...(byPlot.get(k) || []), f]);
    }
    const expect = [...byPlot.values()].map(fs => expectedShare(fs, g.kind, q));
    if (shown.length !== expect.length || shown.some((s, i) => Math.abs(Number(s) - expect[i]) > 0.02 + 1e-4 * frames.length))
      problems.push(`${name}: searching ${JSON.stringify(q)} shows ${JSON.stringify(share)}, expected ${expect.map(e => e.toFixed(2) + '%').join(' · ')}`);
    const dimmedWrong = frames.filter(f => f.text.split('\n')[0].toLowerCase().includes(q.toLowerCase()) === (Number(f.opacity) < 1)).length;
    if (dimmedWrong) problems.push(`${name}: ${dimmedWrong} frames dimmed (or not) against the search`);
    await input.press('Escape');
    if ((await svg.locator('.cflame-share').textContent()) !== '' || (await input.evaluate(e => e.value)) !== '')
      problems.push(`${name}: Escape does not clear the search`);
    await page.mouse.move(0, 0);
  }
  return problems;
}

export async function staticGraphs(page, expectGraphs) {
  const problems = [];
  const seen = await page.evaluate(() => ({
    hints: [...document.querySelectorAll('.cflame-hint')]
      .filter(h => h.getBoundingClientRect().height > 0 && getComputedStyle(h).display !== 'none').length,
    ready: [...document.querySelectorAll('svg')].filter(s => s.cflame).length,
    untitled: [...document.querySelectorAll('svg[data-cflame]')]
      .filter(s => !s.querySelector('path > title')).length,
  }));
  if (expectGraphs !== undefined && seen.hints !== expectGraphs)
    problems.push(`${seen.hints} hints of where the interactive view is, expected ${expectGraphs}`);
  if (seen.ready) problems.push(`${seen.ready} graphs set up by a script that should not have run`);
  if (seen.untitled) problems.push(`${seen.untitled} graphs without their tooltips`);
  return problems;
}
