import { useEffect, useRef } from "react";
import uPlot from "uplot";
import type { ActivitySeries } from "./activity-series.ts";

const SERIES = [
  { label: "accepted", stroke: "#0b57d0" },
  { label: "succeeded", stroke: "#1a7f37" },
  { label: "failed", stroke: "#b3261e" },
  { label: "webhook deliveries", stroke: "#8250df", dash: [6, 4] },
];

/** Runs per bucket as lines (uPlot: a canvas, a few kilobytes), redrawn in place as data arrives. */
export function ActivityChart({ series, title }: { series: ActivitySeries; title: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data: uPlot.AlignedData = [series.times, series.accepted, series.succeeded, series.failed, series.deliveries];

  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const chart = new uPlot(
      {
        width: element.clientWidth || 800,
        height: 260,
        series: [{}, ...SERIES.map((s) => ({ ...s, width: 2, points: { show: false } }))],
        axes: [{}, { label: "runs", size: 50 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      },
      [[], [], [], [], []],
      element,
    );
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(data);
  });

  return (
    <figure className="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} aria-hidden="true" />
    </figure>
  );
}
