// Time ranges and time zones. Times on the wire are epoch milliseconds; the
// user sees them in the time zone of the login record's preference (else the
// browser's).

import { session } from './api.js';

export const PRESETS = [
  { key: '15m', label: 'Last 15 minutes', ms: 15 * 60e3 },
  { key: '1h', label: 'Last hour', ms: 3600e3 },
  { key: '24h', label: 'Last 24 hours', ms: 24 * 3600e3 },
  { key: '7d', label: 'Last 7 days', ms: 7 * 86400e3 },
  { key: '30d', label: 'Last 30 days', ms: 30 * 86400e3 },
];

export function timeZone() {
  const s = session();
  const preferred = s && ((s.preference && s.preference.timezone && s.preference.timezone.value) || s.timezone);
  if (preferred && validZone(preferred)) return preferred;
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

function validZone(zone) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map();
function parts(ms, zone) {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(zone, f);
  }
  const out = {};
  for (const p of f.formatToParts(new Date(ms))) out[p.type] = p.value;
  return out;
}

/** 2026-11-21 14:03:07 (in the user's zone). */
export function formatTime(ms, { seconds = true, millis = false } = {}) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  const p = parts(ms, timeZone());
  let s = `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
  if (seconds) s += `:${p.second}`;
  if (millis) s += `.${String(((ms % 1000) + 1000) % 1000).padStart(3, '0')}`;
  return s;
}

/** A short axis label for a histogram bucket, given the bucket width. */
export function axisLabel(ms, stepMs) {
  const p = parts(ms, timeZone());
  if (stepMs >= 86400e3) return `${p.month}-${p.day}`;
  if (p.hour === '00' && p.minute === '00') return `${p.month}-${p.day}`;
  return `${p.hour}:${p.minute}`;
}

/** The value of an <input type=datetime-local> for ms, in the user's zone. */
export function toLocalInput(ms) {
  const p = parts(ms, timeZone());
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}`;
}

/** The epoch ms of a wall-clock time "YYYY-MM-DDTHH:MM[:SS]" in the user's zone. */
export function fromLocalInput(value) {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(String(value).trim());
  if (!m) return null;
  const [, y, mo, d, hh, mm, ss] = m.map(Number);
  const wall = Date.UTC(y, mo - 1, d, hh, mm, ss || 0);
  const zone = timeZone();
  // The zone's offset at a moment: wall clock there minus UTC.
  const offset = (ms) => {
    const p = parts(ms, zone);
    return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - ms;
  };
  let guess = wall - offset(wall);
  guess = wall - offset(guess);
  return guess;
}

/** The range of URL state {from, to}: presets ("now-24h") or epoch ms. */
export function resolveRange(from, to, now = Date.now()) {
  const preset = presetOf(from, to);
  if (preset) return { from: now - preset.ms, to: now, preset };
  const f = Number(from);
  const t = Number(to);
  if (Number.isFinite(f) && Number.isFinite(t) && f <= t) return { from: f, to: t, preset: null };
  return null;
}

export function presetOf(from, to) {
  if (to !== 'now' || typeof from !== 'string' || !from.startsWith('now-')) return null;
  return PRESETS.find((p) => p.key === from.slice(4)) || null;
}

export function rangeLabel(from, to) {
  const preset = presetOf(from, to);
  if (preset) return preset.label;
  const r = resolveRange(from, to);
  if (!r) return 'Choose a time range';
  return `${formatTime(r.from, { seconds: false })} → ${formatTime(r.to, { seconds: false })}`;
}

export function durationLabel(ms) {
  const units = [[86400e3, 'd'], [3600e3, 'h'], [60e3, 'm'], [1e3, 's']];
  for (const [size, unit] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  for (const [size, unit] of units) if (ms >= size) return `${(ms / size).toFixed(1)}${unit}`;
  return `${ms}ms`;
}
