// SVG charts, small and dependency-free: step or line series on linear (or log) axes, a legend whose
// buttons hide and show series, and a readout of every shown series at the pointer (or, with the
// chart focused, at the x the arrow keys move to).
import { h, number, svg } from "./dom.js";

export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
const W = 720;
const H = 260;
const PAD = { left: 56, right: 24, top: 12, bottom: 36 }; // right: half the last tick label ("1,000") fits

function ticks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const step = 10 ** Math.floor(Math.log10(raw));
  const nice = [1, 2, 5, 10].map((m) => m * step).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / nice) * nice; v <= hi + nice * 1e-9; v += nice) out.push(v);
  return out;
}

function timeLabel(epoch, span) {
  const date = new Date(epoch * 1000);
  const iso = date.toISOString();
  return span > 2 * 86400 ? iso.slice(5, 10) : span > 3600 ? iso.slice(11, 16) : iso.slice(11, 19);
}

export function valueAt(series, x) {
  // A step series holds each point's value until the next point; a line interpolates.
  const pts = series.points;
  if (!pts.length || x < pts[0][0] || x > pts[pts.length - 1][0]) return null;
  let i = 0;
  while (i + 1 < pts.length && pts[i + 1][0] <= x) i += 1;
  if (series.step || i + 1 >= pts.length) return pts[i][1];
  const [x0, y0] = pts[i];
  const [x1, y1] = pts[i + 1];
  return x1 === x0 ? y1 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}

export function chart({ title, xLabel, yLabel, series, time = false, logX = false, yMin = 0, yMax, formatY = number, id }) {
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p[0]);
  const ys = all.map((p) => p[1]).filter((y) => Number.isFinite(y));
  const x0 = xs.length ? Math.min(...xs) : 0;
  const x1 = xs.length ? Math.max(...xs) : 1;
  const top = yMax ?? Math.max(1e-9, ...ys) * 1.05;
  const fx = logX ? (x) => Math.log10(Math.max(x, 1)) : (x) => x;
  const [lo, hi] = [fx(x0), fx(x1) > fx(x0) ? fx(x1) : fx(x0) + 1];
  const px = (x) => PAD.left + ((fx(x) - lo) / (hi - lo)) * (W - PAD.left - PAD.right);
  const py = (y) => H - PAD.bottom - ((y - yMin) / (top - yMin || 1)) * (H - PAD.top - PAD.bottom);

  const grid = svg("g", { class: "grid" });
  for (const t of ticks(yMin, top)) {
    grid.append(svg("line", { x1: PAD.left, x2: W - PAD.right, y1: py(t), y2: py(t) }));
    const label = svg("text", { x: PAD.left - 6, y: py(t) + 4, "text-anchor": "end" });
    label.textContent = formatY(t);
    grid.append(label);
  }
  const xticks = logX ? ticks(lo, hi).map((e) => 10 ** e) : ticks(x0, x1);
  for (const t of xticks) {
    const label = svg("text", { x: px(t), y: H - PAD.bottom + 16, "text-anchor": "middle" });
    label.textContent = time ? timeLabel(t, x1 - x0) : number(t);
    grid.append(label);
  }
  const axisX = svg("text", { x: (W + PAD.left) / 2, y: H - 4, "text-anchor": "middle", class: "axis" });
  axisX.textContent = xLabel;
  const axisY = svg("text", { x: 12, y: H / 2, "text-anchor": "middle", class: "axis", transform: `rotate(-90 12 ${H / 2})` });
  axisY.textContent = yLabel;

  const paths = series.map((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    let d = "";
    let pen = false;
    s.points.forEach(([x, y], k) => {
      if (!Number.isFinite(y)) {
        pen = false; // a gap (a bin with no data)
        return;
      }
      const [cx, cy] = [px(x).toFixed(1), py(y).toFixed(1)];
      if (s.step) {
        // step-after: the value holds from its x to the next point's
        const until = px(k + 1 < s.points.length ? s.points[k + 1][0] : x).toFixed(1);
        d += `${pen ? `V${cy}` : `M${cx},${cy}`}H${until}`;
      } else d += `${pen ? "L" : "M"}${cx},${cy}`;
      pen = true;
    });
    const last = s.points.length ? s.points[s.points.length - 1] : null;
    return svg("path", {
      d,
      stroke: color,
      fill: "none",
      "stroke-width": s.dashed ? 1.5 : 2,
      "stroke-dasharray": s.dashed ? "6 4" : null,
      "data-series": s.name,
      "data-last-x": last ? last[0] : null,
      "data-last-y": last ? last[1] : null,
    });
  });
  const cursor = svg("line", { class: "cursor", y1: PAD.top, y2: H - PAD.bottom, x1: -10, x2: -10 });
  const plot = svg(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${title}: ${yLabel} against ${xLabel}`, tabindex: 0, class: "chart", id },
    grid,
    axisX,
    axisY,
    paths,
    cursor,
  );
  const readout = h("p", { class: "readout", "aria-live": "polite" }, "Point at the chart, or focus it and use ← →, to read values.");
  let at = x1;
  const show = (x) => {
    at = Math.min(Math.max(x, x0), x1);
    cursor.setAttribute("x1", px(at));
    cursor.setAttribute("x2", px(at));
    const parts = series
      .map((s, i) => [s, paths[i]])
      .filter(([, path]) => !path.classList.contains("hidden"))
      .map(([s]) => `${s.name}: ${formatY(valueAt(s, at))}`);
    readout.textContent = `${time ? new Date(at * 1000).toISOString().replace(".000", "") : number(at)} — ${parts.join("; ")}`;
  };
  const invert = (clientX) => {
    const box = plot.getBoundingClientRect();
    const frac = ((clientX - box.left) / box.width) * W;
    const v = lo + ((frac - PAD.left) / (W - PAD.left - PAD.right)) * (hi - lo);
    return logX ? 10 ** v : v;
  };
  plot.addEventListener("pointermove", (event) => show(invert(event.clientX)));
  plot.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    event.preventDefault();
    const step = (x1 - x0) / 50 || 1;
    show(logX ? at * (event.key === "ArrowLeft" ? 0.8 : 1.25) : at + (event.key === "ArrowLeft" ? -step : step));
  });
  const legend = h(
    "div",
    { class: "legend" },
    series.map((s, i) =>
      h(
        "button",
        {
          type: "button",
          "aria-pressed": "true",
          onclick: (event) => {
            const shown = paths[i].classList.toggle("hidden");
            event.currentTarget.setAttribute("aria-pressed", String(!shown));
            show(at);
          },
        },
        h("span", { class: `swatch${s.dashed ? " dashed" : ""}`, "aria-hidden": "true", dataset: { color: s.color || PALETTE[i % PALETTE.length] } }),
        s.name,
      ),
    ),
  );
  for (const swatch of legend.querySelectorAll(".swatch")) swatch.style.borderColor = swatch.dataset.color;
  return h("figure", { class: "figure" }, h("figcaption", {}, title), plot, legend, readout);
}
