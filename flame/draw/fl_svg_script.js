// SPDX-License-Identifier: BSD-3-Clause
// fl_svg_script.js: what makes cflame's SVG interactive by itself, inline in
// the SVG (fl__svg_interactive), with no other code and no network.
//
// The SVG it finds is what fl_svg.c, fl_chart.c, fl__table.c and
// fl_sandwich.c draw: an <svg data-cflame='KIND'> (graph, chart, table,
// sandwich) whose frames are <path d='Mx yhw'> with a <title>. A graph or a
// chart also has data-plot='X0 X1', its plot's extent; a sandwich holds two
// graphs as nested svgs; a chart's lanes are <g data-lane> and its time axis
// <g data-axis='T0 T1'> (seconds). A graph too deep for its height has a
// band (<g data-rows='Y0 STEP SHOWN'>: the y of depth 0, the y from one
// depth to the next, the levels drawn, the band's included): its frames at
// the band's level that have deeper ones are drawn collapsed, and the
// frames deeper still are written at y0 + depth * step, not displayed. The
// script
//  - adds a band above the drawing with a search box, the matched share
//    and a reset button, and hides the static hint (.cflame-hint);
//  - on hover outlines a frame and shows its title in a box in the SVG (the
//    <title>s are taken out, so the browser's tooltip does not repeat it):
//    the box lies inside the SVG whatever the title, each line wrapped to
//    the SVG's width (a wrapped part is a tspan of class cflame-more) and
//    the lines cut, ending in an ellipsis, to its height;
//  - on click zooms a graph or chart to the frame (its width becomes the
//    plot's), relabelling the frames; in a graph with a band, a frame whose
//    subtree reaches the band (a frame of the band: drawn in the band's
//    fill, saying how many levels it holds, with the class cflame-band) is
//    laid out afresh from its own level up, so the band opens as far as the
//    levels go, and the rest is a band again; double-click,
//    Escape or the button reset;
//  - dims the frames whose name does not hold the search text (case
//    ignored) and shows the matched share: the sum of the first percent in
//    the titles of the matched frames that no matched frame of their lane
//    contains, so that nested matches count once (a table's rows: all).
// Every copy runs once per page and sets up each SVG not set up yet, so a
// notebook of many graphs works whichever copy runs (jQuery runs them
// detached from their SVG). The text must stay inside CDATA in SVG and in
// an HTML block of markdown: so no blank line, no dollar sign, no
// backslash before a bracket, no closing tag.
(function () {
  var NS = 'http://www.w3.org/2000/svg', BAND = 30, CH = 6.6, FONT = 11;
  var MONO = 'Menlo, Consolas, DejaVu Sans Mono, monospace';
  function set(e, attrs) {
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function el(name, attrs, parent, ns) {
    var e = set(document.createElementNS(ns || NS, name), attrs);
    if (parent) parent.appendChild(e);
    return e;
  }
  function num(s) { return (s || '').split(' ').map(Number); }
  function cut(s, w) {
    var n = Math.floor((w - 6) / CH + 1e-9);
    if (n < 3) return '';
    return s.length > n ? s.slice(0, n - 1) + '\u2026' : s;
  }
  // The deepest depth under frame f of a graph with a band (R, its
  // plot's rows): while a frame one level deeper starts within f, its
  // subtree goes on (siblings do not overlap).
  function deep(R, f) {
    for (var d = f.depth; (R.by[d + 1] || []).some(g => g.x > f.x - .05 && g.x < f.x + f.w - .05); d++);
    return d;
  }
  // The words on frame f of a band, w pixels wide, as flame/draw/fl__render.c's
  // fl__band_label: the longest that fit; the hover box says them whole.
  function words(R, f, w) {
    var n = '\u2026 ' + (deep(R, f) - f.depth + 1).toLocaleString('en-US'), t = n + ' more levels';
    f.words = t + ' (click to open)\n';
    return [f.words.trim(), t, n].find(s => cut(s, w) == s) || cut(n, w);
  }
  function setUp(svg) {
    svg.cflame = true;
    var kind = svg.getAttribute('data-cflame'), vb = svg.viewBox.baseVal;
    var W = vb.width, H = vb.height, zooms = kind != 'table';
    var bg = (svg.querySelector('rect') || svg).getAttribute('fill') || '#fff';
    var ink = (svg.querySelector('g[fill]') || svg).getAttribute('fill') || '#222';
    // The drawing moves down by BAND, where the controls go.
    var body = el('g', {transform: 'translate(0,' + BAND + ')'});
    while (svg.firstChild) body.appendChild(svg.firstChild);
    el('rect', {width: '100%', height: '100%', fill: bg}, svg);
    svg.appendChild(body);
    set(svg, {viewBox: '0 0 ' + W + ' ' + (H + BAND), height: H + BAND});
    var hint = svg.parentNode && svg.parentNode.querySelector('.cflame-hint');
    if (hint) hint.style.display = 'none';
    body.querySelectorAll('.cflame-hint').forEach(e => e.remove());
    var plots = kind == 'sandwich' ? [...body.querySelectorAll('svg[data-cflame]')] : [body];
    var frames = [];
    plots = plots.map(p => {
      var owner = p == body ? svg : p, ext = num(owner.getAttribute('data-plot'));
      var plot = {el: p, lo: ext[0], hi: ext[1], frames: [], zoom: null};
      var axis = p.querySelector('g[data-axis]');
      if (axis) plot.axis = {el: axis, t: num(axis.getAttribute('data-axis'))};
      p.querySelectorAll('path').forEach(e => {
        var t = e.querySelector('title'), prev = e.previousElementSibling;
        if (p != body && e.ownerSVGElement != p) return;
        // An untitled bar over a titled one (a table's self bar) is part of it.
        if (!t && prev && prev.cflame) prev.cflame.also.push(e), e.cflame = prev.cflame;
        if (!t) return;
        var d = /M([-0-9.e]+) ([-0-9.e]+)h([-0-9.e]+)/.exec(e.getAttribute('d'));
        var lane = e.closest('[data-lane]');
        var f = {e: e, d: e.getAttribute('d'), also: [], x: +d[1], y: +d[2], cy: +d[2], w: +d[3], text: t.textContent, plot: plot, words: '',
                 h: +e.closest('[stroke-width]').getAttribute('stroke-width'),
                 lane: lane ? lane.getAttribute('data-lane') : ''};
        f.name = f.text.split('\n')[0];
        f.l = f.x;
        f.r = f.x + f.w;
        f.pct = +((/[(]([-0-9.e+]+)%[)]/.exec(f.text) || [0, 0])[1]);
        t.remove();
        e.cflame = f;
        frames.push(f);
        plot.frames.push(f);
      });
      // The band's frames are drawn in its fill, labelled by draw(). Each
      // frame's depth follows from its y.
      var band = p.querySelector('g[data-rows]');
      if (band && (p == body || band.ownerSVGElement == p)) {
        var a = num(band.getAttribute('data-rows'));
        var R = plot.rows = {y0: a[0], step: a[1], cut: a[2] - 1, by: [], fill: band.getAttribute('fill')};
        band.remove();
        plot.frames.forEach(f => {
          f.depth = Math.round((f.y - a[0]) / a[1]);
          (R.by[f.depth] = R.by[f.depth] || []).push(f);
        });
      }
      if (zooms) {
        // The script draws the labels, so that they follow the zoom.
        var old = p.querySelector('g[pointer-events=none]');
        plot.labels = el('g', {'font-family': MONO,
                               'font-size': FONT, 'pointer-events': 'none',
                               fill: old ? old.getAttribute('fill') : ink});
        if (old && old.parentNode == p) p.replaceChild(plot.labels, old);
        else p.appendChild(plot.labels);
      }
      plot.outline = el('rect', {fill: 'none', stroke: ink, 'stroke-width': 1.5,
                                 'pointer-events': 'none', visibility: 'hidden'}, p);
      return plot;
    });
    // The controls, from the left, where a page too narrow for the SVG
    // (it scrolls) still shows them: the search box, the matched share, reset.
    var ui = el('g', {'font-size': 12, fill: ink}, svg);
    var reset = el('text', {class: 'cflame-reset', x: 330, y: 20, cursor: 'pointer', 'text-decoration': 'underline',
                            visibility: 'hidden'}, ui);
    reset.textContent = 'Reset zoom';
    var share = el('text', {class: 'cflame-share', x: 216, y: 20}, ui);
    var fo = el('foreignObject', {x: 10, y: 4, width: 200, height: 22}, ui);
    var what = 'search function names';
    var input = el('input', {type: 'search', placeholder: what, 'aria-label': what,
                             style: 'width:196px;font:12px sans-serif;box-sizing:border-box'},
                   fo, 'http://www.w3.org/1999/xhtml');
    var box = el('g', {class: 'cflame-box', 'pointer-events': 'none', visibility: 'hidden',
                       'font-family': MONO,
                       'font-size': FONT}, svg);
    var boxRect = el('rect', {fill: bg, stroke: ink, 'stroke-width': 1, rx: 3}, box);
    var boxText = el('text', {fill: ink, y: 16}, box);
    function draw(plot) {
      if (!zooms) return;
      var z = plot.zoom || [plot.lo, plot.hi], k = (plot.hi - plot.lo) / (z[1] - z[0]);
      var R = plot.rows, base = plot.base || 0;
      if (plot.labels) plot.labels.textContent = '';
      plot.frames.forEach(f => {
        var l = plot.lo + (f.x - z[0]) * k, r = l + f.w * k;
        if (l < plot.lo) l = plot.lo;
        if (r > plot.hi) r = plot.hi;
        var level = R ? f.depth - base : 0, band = R && level == R.cut && deep(R, f) > f.depth;
        f.shown = r - l > 0.01 && level >= 0 && level <= (R ? R.cut : 0);
        f.l = l;
        f.r = r;
        f.cy = R ? R.y0 + level * R.step : f.y;
        f.e.style.display = f.shown ? 'inline' : 'none';
        f.e.style.stroke = band ? R.fill : '';
        f.e.classList.toggle('cflame-band', !!band);
        f.words = '';
        f.e.setAttribute('d', plot.zoom ? 'M' + l + ' ' + f.cy + 'h' + (r - l) : f.d);
        if (!f.shown) return;
        var label = plot.labels && (band ? words(R, f, r - l) : cut(f.name, r - l));
        if (label) el('text', {x: l + 3, y: f.cy + 4}, plot.labels).textContent = label;
      });
      if (plot.axis) {
        var t = plot.axis.t, s = (t[1] - t[0]) / (plot.hi - plot.lo);
        var ends = plot.axis.el.querySelectorAll('text');
        ends[0].textContent = (t[0] + (z[0] - plot.lo) * s).toFixed(3) + ' s';
        ends[ends.length - 1].textContent = (t[0] + (z[1] - plot.lo) * s).toFixed(3) + ' s';
      }
      reset.setAttribute('visibility', plots.some(p => p.zoom) ? 'visible' : 'hidden');
    }
    // The matched share: the sum of the percents of the matched frames that
    // no matched frame of their lane contains (a table's rows: all).
    function matched(plot) {
      var lanes = {}, sum = 0;
      plot.frames.forEach(f => {
        var k = zooms ? f.lane : f.y;
        if (f.hit) (lanes[k] = lanes[k] || []).push(f);
      });
      for (var k in lanes) {
        var top = null;
        lanes[k].sort((a, b) => a.x - b.x || b.w - a.w).forEach(f => {
          if (top && f.x + f.w <= top.x + top.w + 0.2 && f.y != top.y) return;
          sum += f.pct;
          top = f;
        });
      }
      return sum;
    }
    function search() {
      var q = input.value.toLowerCase();
      frames.forEach(f => {
        f.hit = q && f.name.toLowerCase().indexOf(q) >= 0;
        [f.e].concat(f.also).forEach(e => { e.style.opacity = q && !f.hit ? 0.25 : ''; });
      });
      share.textContent = q ? 'matched: ' + plots.map(p => matched(p).toFixed(2) + '%').join(' \u00b7 ') : '';
    }
    // A zoom into f lays the levels out from f's own when its subtree
    // would reach the band from the root's.
    function zoom(plot, f) {
      plots.forEach(p => {
        p.zoom = p == plot && f ? [f.x, f.x + f.w] : null;
        p.base = p.zoom && p.rows && deep(p.rows, f) > p.rows.cut ? f.depth : 0;
        draw(p);
      });
      over(null);
    }
    function over(f, ev) {
      plots.forEach(p => p.outline.setAttribute('visibility', 'hidden'));
      box.setAttribute('visibility', f ? 'visible' : 'hidden');
      if (!f) return;
      set(f.plot.outline, {x: f.l, y: f.cy - f.h / 2, width: f.r - f.l, height: f.h, visibility: 'visible'});
      // The box is 12 wider and 8 taller than its text: lines of per
      // characters (and an ellipsis) at most, measured as the browser draws
      // them (CH is a guess a wider font overflows), and most lines at most
      // fit in the SVG, so that placed beside the pointer or at 0 it lies
      // inside.
      boxText.textContent = 'MMMMMMMMMM';
      var cw = boxText.getComputedTextLength() / 10 || CH, per = Math.floor((W - 12) / cw) - 1,
          most = Math.floor((H + BAND - 8) / 14), lines = [];
      (f.words + f.text).split('\n').forEach(s => { for (var i = 0; !i || i < s.length; i += per) lines.push([s.slice(i, i + per), i]); });
      if (lines.length > most) lines.length = most, lines[most - 1][0] += '\u2026';
      boxText.textContent = '';
      lines.forEach((l, i) => {
        el('tspan', {x: 8, dy: i ? 14 : 0, class: l[1] ? 'cflame-more' : ''}, boxText).textContent = l[0];
      });
      var wide = boxText.getBBox().width + 12;
      var tall = lines.length * 14 + 8;
      var p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(svg.getScreenCTM().inverse());
      var x = p.x + 14, y = p.y + 14;
      if (x + wide > W) x = Math.max(0, p.x - 14 - wide);
      if (y + tall > H + BAND) y = Math.max(0, p.y - 14 - tall);
      set(boxRect, {width: wide, height: tall});
      box.setAttribute('transform', 'translate(' + x + ',' + y + ')');
    }
    // The frame under the pointer: the SVG's own mark (set up) is none.
    function at(ev) { var f = ev.target.cflame; return f && f.plot ? f : null; }
    svg.addEventListener('mousemove', ev => { over(at(ev), ev); });
    svg.addEventListener('mouseleave', () => { over(null); });
    svg.addEventListener('click', ev => {
      var f = at(ev);
      if (f && zooms) zoom(f.plot, f);
    });
    svg.addEventListener('dblclick', () => { zoom(null); });
    reset.addEventListener('click', ev => {
      ev.stopPropagation();
      zoom(null);
    });
    input.addEventListener('input', search);
    // Keys typed in the box are the box's, not the page's (the classic
    // notebook's shortcuts); Escape clears the search and the zoom.
    ['keydown', 'keypress', 'keyup'].forEach(type => {
      input.addEventListener(type, ev => {
        ev.stopPropagation();
        if (type == 'keydown' && ev.key == 'Escape') {
          input.value = '';
          search();
          zoom(null);
        }
      });
    });
    plots.forEach(draw);
  }
  function setUpAll() {
    document.querySelectorAll('svg[data-cflame]').forEach(svg => {
      var up = svg.parentNode && svg.parentNode.closest && svg.parentNode.closest('svg[data-cflame]');
      if (!svg.cflame && !up) setUp(svg);
    });
  }
  // While a page is read, what follows the SVG (a hint) is not there yet.
  if (document.readyState == 'loading') document.addEventListener('DOMContentLoaded', setUpAll);
  else setUpAll();
})();
