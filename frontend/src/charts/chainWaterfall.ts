// The waterfall of one wait chain: one row per task, its wait as a bar on a shared time axis,
// arrows from the waker / holder up to the waiter, `print` markers as vertical lines.
import type { Chain, ChainLink, Mark } from '../api/stallTypes';
import { ABSOLUTE_TIME, formatAxisNumber, formatTime, type TimeBase, formatNs, formatSector, formatWaitNs, pickTimeUnit, taskLabel } from '../lib/format';
import { html, tooltipLines } from './html';
import { fitLabel, type RenderApi, type RenderParams } from './labels';
import { C, FONT, MONO, axisCommon, baseTextStyle, tooltipStyle } from './theme';
import type { EChartsOption } from './types';

export type ChainRow = {
  label: string; // y-axis category: "comm pid"
  kind: 'wait' | 'instant' | 'request';
  link: number | null; // 1-based position of the chain link (null for the block request row)
  start: number; // ns since the origin
  end: number;
  text: string; // bar label
  inferred: boolean;
  endKnown: boolean;
};

export type ChainArrow = {
  from: number; // row index of the waker / holder / completing request
  to: number; // row index of the waiter
  at: number; // ns since the origin
  label: string;
  inferred: boolean;
  evidence: string;
};

export type ChainLayout = {
  origin: number; // absolute ns
  span: number; // ns from the origin to the last end
  rows: ChainRow[];
  arrows: ChainArrow[];
  marks: { at: number; text: string; line: number }[];
};

export const RELATION_LABEL: Record<string, string> = {
  held_by: 'held by',
  woken_by: 'woken by',
  io_completion: 'I/O completion',
};

export function relationLabel(r: string | null | undefined): string {
  if (!r) return '';
  return RELATION_LABEL[r] ?? r.replace(/_/g, ' ');
}

export function linkLabel(l: Pick<ChainLink, 'comm' | 'pid'>): string {
  return taskLabel(l.comm, l.pid);
}

/** Rows, arrows and markers of a chain, in ns relative to its earliest instant. */
export function chainLayout(chain: Chain, marks: Mark[] = []): ChainLayout {
  const links = chain.links;
  const req = links.find((l) => l.request)?.request ?? null;
  const reqStart = req ? ([req.q_ns, req.i_ns, req.d_ns].filter((v): v is number => v !== null)[0] ?? null) : null;
  const known = (v: number | null | undefined): v is number => typeof v === 'number';
  const starts = links.map((l) => l.start_ns ?? l.end_ns).filter(known);
  if (reqStart !== null) starts.push(reqStart);
  const origin = starts.length ? Math.min(...starts) : 0;
  const ends = links.map((l) => l.end_ns ?? l.start_ns).filter(known);
  if (req?.c_ns != null) ends.push(req.c_ns);
  const span = Math.max(1, (ends.length ? Math.max(...ends) : origin) - origin);
  const startOf = (l: ChainLink) => (l.start_ns ?? l.end_ns ?? origin) - origin;
  const endOf = (l: ChainLink) => (l.end_ns ?? origin + span) - origin;

  const rows: ChainRow[] = links.map((l, i) => {
    const instant = l.duration_ns === 0 && !l.lock;
    const prev = links[i - 1];
    return {
      label: linkLabel(l),
      kind: instant ? 'instant' : 'wait',
      link: i + 1,
      start: startOf(l),
      end: endOf(l),
      text: instant
        ? `${prev ? relationLabel(prev.relation) : 'running'}: wakes ${prev ? linkLabel(prev) : ''}`.trim()
        : `${l.lock ?? 'off CPU'} · ${formatWaitNs(l.duration_ns, l.end_known)}`,
      inferred: l.inferred,
      endKnown: l.end_known !== false,
    };
  });

  const arrows: ChainArrow[] = [];
  for (let i = 0; i + 1 < links.length; i++) {
    const l = links[i];
    arrows.push({
      from: i + 1,
      to: i,
      at: endOf(l),
      label: relationLabel(l.relation) || 'next',
      inferred: l.inferred,
      evidence: l.evidence,
    });
  }

  if (req) {
    const owner = links.findIndex((l) => l.request);
    const row = rows.length;
    rows.push({
      label: `request ${req.dev}`,
      kind: 'request',
      link: null,
      start: (reqStart ?? req.c_ns ?? origin) - origin,
      end: (req.c_ns ?? origin + span) - origin,
      text: `${req.rwbs ?? ''} ${formatSector(req.sector, req.nsect)} · Q2C ${req.c_ns !== null && reqStart !== null ? formatNs(req.c_ns - reqStart) : '—'}`.trim(),
      inferred: false,
      endKnown: req.c_ns !== null,
    });
    if (req.c_ns !== null) {
      arrows.push({ from: row, to: owner, at: req.c_ns - origin, label: 'completed', inferred: false, evidence: `block request ${req.dev} completed` });
    }
  }

  const pad = span * 0.05;
  const inRange = marks.filter((m) => m.t_ns - origin >= -pad && m.t_ns - origin <= span + pad);
  return { origin, span, rows, arrows, marks: inRange.map((m) => ({ at: m.t_ns - origin, text: m.text, line: m.line })) };
}

const BAR = { wait: C.i2d, inferredWait: '#d9935f', instant: C.g2i, request: C.d2c } as const;

/** Print markers closer than this share of the time axis to the previous labelled one are labelled with it
 * ("write start · write done") instead of drawing their text over its text. */
export const MARK_MERGE = 0.12;

/** The markLine items of the print markers: each at its time (in the axis unit); a marker too close to the one
 * labelled before it has no label of its own, its text joins that label. */
export function markLineData(marks: ChainLayout['marks'], axisRange: number, toUnit: (ns: number) => number) {
  const items: { name: string; xAxis: number; label?: { show?: boolean; formatter?: string } }[] = marks.map((m) => ({ name: m.text, xAxis: toUnit(m.at) }));
  const order = marks.map((_, i) => i).sort((a, b) => marks[a].at - marks[b].at);
  let leader = -1;
  let texts: string[] = [];
  const close = () => {
    if (leader >= 0 && texts.length > 1) items[leader].label = { formatter: texts.join(' · ') };
  };
  for (const i of order) {
    if (leader >= 0 && marks[i].at - marks[leader].at < axisRange * MARK_MERGE) {
      items[i].label = { show: false };
      if (!texts.includes(marks[i].text)) texts.push(marks[i].text);
    } else {
      close();
      leader = i;
      texts = [marks[i].text];
    }
  }
  close();
  return items;
}

export function buildChainOption(chain: Chain, marks: Mark[] = [], selectedLink: number | null = null, time: TimeBase = ABSOLUTE_TIME): EChartsOption {
  const lay = chainLayout(chain, marks);
  const unit = pickTimeUnit(lay.span);
  const u = (ns: number) => ns / unit.ns;
  const pad = lay.span * 0.04;
  const color = (r: ChainRow) => (r.kind === 'request' ? BAR.request : r.kind === 'instant' ? BAR.instant : r.inferred ? BAR.inferredWait : BAR.wait);

  const renderItem = (params: RenderParams, api: RenderApi) => {
    const row = lay.rows[params.dataIndex];
    const [x0, y] = api.coord([api.value(0), api.value(2)]);
    const [x1] = api.coord([api.value(1), api.value(2)]);
    const h = api.size([0, 1])[1] * 0.46;
    const width = Math.max(row.kind === 'instant' ? 6 : 3, x1 - x0);
    const selected = row.link !== null && row.link === selectedLink;
    const right = params.coordSys.x + params.coordSys.width;
    const inside = width > 180;
    const textX = inside ? x0 + 6 : x0 + width + 6;
    return {
      type: 'group',
      children: [
        {
          type: 'rect',
          shape: { x: x0, y: y - h / 2, width, height: h, r: 2 },
          style: {
            fill: color(row),
            stroke: selected ? C.selected : row.inferred ? '#ffd2b5' : 'transparent',
            lineWidth: selected ? 2 : 1,
            lineDash: row.inferred ? [4, 3] : undefined,
            opacity: row.endKnown ? 1 : 0.75,
          },
        },
        {
          type: 'text',
          silent: true,
          style: {
            x: textX,
            y,
            text: fitLabel(row.text, inside ? width - 8 : Math.max(0, right - textX) + 160),
            verticalAlign: 'middle',
            fill: inside ? '#10151c' : C.text,
            font: `600 11px ${MONO}`,
          },
        },
      ],
    };
  };

  return {
    backgroundColor: 'transparent',
    animation: false,
    textStyle: baseTextStyle,
    grid: { left: 150, right: 170, top: 30, bottom: 40 },
    tooltip: {
      ...tooltipStyle,
      trigger: 'item',
      confine: true,
      formatter: (p: unknown) => {
        const { seriesName, componentType, dataIndex } = p as { seriesName: string; componentType: string; dataIndex: number };
        if (seriesName === 'relations') {
          const a = lay.arrows[dataIndex];
          if (!a) return '';
          return tooltipLines(
            html`<b>${lay.rows[a.to].label}</b> ${a.label} <b>${lay.rows[a.from].label}</b>${a.inferred && html` <i>(inferred)</i>`}`,
            html`<div style="max-width:460px;white-space:normal">${a.evidence}</div>`,
          );
        }
        if (componentType === 'markLine') {
          const m = lay.marks[dataIndex];
          return m ? tooltipLines(html`print marker (line ${m.line})`, html`<b>${m.text}</b> at ${formatTime(lay.origin + m.at, time)}`) : '';
        }
        const r = lay.rows[dataIndex];
        const l = r?.link ? chain.links[r.link - 1] : null;
        if (!r) return '';
        const head = html`<b>${r.label}</b> · ${r.text}${r.inferred && html` <i>(inferred)</i>`}`;
        const when = html`${formatTime(lay.origin + r.start, time)} → ${formatTime(lay.origin + r.end, time)}${r.endKnown ? '' : ' (end not traced)'}`;
        const ev = l && html`<div style="max-width:460px;white-space:normal;color:${C.muted}">${l.evidence}</div>`;
        return tooltipLines(head, html`${when}${ev || ''}`, !!r.link && html`<i>click: calls of this task around it</i>`);
      },
    },
    xAxis: {
      ...axisCommon,
      type: 'value',
      name: `time since the first wait (${unit.unit})`,
      nameLocation: 'middle',
      nameGap: 24,
      min: u(-pad),
      max: u(lay.span + pad),
      axisLabel: { ...axisCommon.axisLabel, formatter: (v: number) => formatAxisNumber(v), hideOverlap: true },
    },
    yAxis: {
      ...axisCommon,
      type: 'category',
      inverse: true,
      data: lay.rows.map((r) => r.label),
      axisLabel: { ...axisCommon.axisLabel, color: C.text, fontFamily: MONO },
      splitLine: { show: true, lineStyle: { color: C.grid } },
    },
    series: [
      {
        name: 'waits',
        type: 'custom',
        renderItem: renderItem as never,
        encode: { x: [0, 1], y: 2 },
        data: lay.rows.map((r, i) => ({ value: [u(r.start), u(r.end), i], itemStyle: { color: color(r) } })),
        markLine: {
          symbol: 'none',
          silent: false,
          lineStyle: { color: C.message, type: 'dashed', width: 1 },
          // above the plot (the y axis is inverted): clear of the time axis' labels
          label: { color: C.message, position: 'start', fontSize: 11, formatter: '{b}' },
          data: markLineData(lay.marks, lay.span + 2 * pad, u),
        },
        z: 2,
      },
      {
        name: 'relations',
        type: 'custom',
        // The arrows are the markLine below; this series draws their labels, left of each arrow, horizontal.
        renderItem: ((params: RenderParams, api: RenderApi) => {
          const a = lay.arrows[params.dataIndex];
          const [x, y0] = api.coord([api.value(0), api.value(1)]);
          const [, y1] = api.coord([api.value(0), api.value(2)]);
          return {
            type: 'text',
            style: {
              x: x - 6,
              y: (y0 + y1) / 2,
              text: a.label + (a.inferred ? ' (inferred)' : ''),
              align: 'right',
              verticalAlign: 'middle',
              fill: a.inferred ? '#ffd2b5' : C.text,
              font: `600 11px ${FONT}`,
              backgroundColor: C.panel,
              padding: [1, 4],
            },
          };
        }) as never,
        encode: { x: 0, y: [1, 2] },
        data: lay.arrows.map((a) => [u(a.at), a.from, a.to]),
        z: 3,
        markLine: {
          symbol: ['circle', 'arrow'],
          symbolSize: [5, 9],
          silent: false,
          label: { show: false },
          data: lay.arrows.map((a) => [
            {
              name: a.label,
              coord: [u(a.at), a.from],
              lineStyle: { type: a.inferred ? 'dashed' : 'solid', color: a.inferred ? '#ffd2b5' : C.text, width: 1.5 },
            },
            { coord: [u(a.at), a.to] },
          ]),
        },
      },
    ],
  } as EChartsOption;
}
