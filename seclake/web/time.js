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

/** The zone's offset at a moment, in ms: the wall clock there minus UTC. */
function offsetAt(ms, zone) {
  const p = parts(ms, zone);
  return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - (ms - (((ms % 1000) + 1000) % 1000));
}

/** The wall clock of ms in the user's zone, as epoch ms of that wall time in UTC (for rounding). */
export function wallClock(ms) {
  return ms + offsetAt(ms, timeZone());
}

/** The epoch ms of a wall-clock time (as wallClock gives it) in the user's zone. */
export function fromWallClock(wall) {
  const zone = timeZone();
  let guess = wall - offsetAt(wall, zone);
  guess = wall - offsetAt(guess, zone);
  return guess;
}

const DAY = 86400e3;
// Tick intervals of a time axis, as Kibana's: round in the user's wall clock.
const TICK_STEPS = [1e3, 5e3, 10e3, 15e3, 30e3, 60e3, 5 * 60e3, 10 * 60e3, 15 * 60e3, 30 * 60e3,
  3600e3, 2 * 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY,
  91 * DAY, 182 * DAY, 365 * DAY];

/**
 * Ticks of a time axis from..to with at most `most` of them: [{at, label, date}]
 * at round boundaries of one interval in the user's zone (every 3 hours on the
 * hour, every day at midnight). A tick on a day boundary is labelled with the
 * date (date: true), any other with the time of day.
 */
export function timeTicks(from, to, most) {
  const span = Math.max(1, to - from);
  const every = TICK_STEPS.find((s) => span / s <= Math.max(1, most)) || TICK_STEPS[TICK_STEPS.length - 1];
  const ticks = [];
  let wall = Math.ceil(wallClock(from) / every) * every;
  for (let guard = 0; guard < 1000; guard++, wall += every) {
    const at = fromWallClock(wall);
    if (at > to) break;
    if (at < from) continue;
    const p = parts(at, timeZone());
    const date = p.hour === '00' && p.minute === '00' && p.second === '00';
    // Ticks a month or more apart name the year too (a zoomed-out range spans years).
    const label = every >= 30 * DAY ? `${p.year}-${p.month}-${p.day}` : date || every >= DAY ? `${p.month}-${p.day}`
      : every < 60e3 ? `${p.hour}:${p.minute}:${p.second}` : `${p.hour}:${p.minute}`;
    ticks.push({ at, label, date: date || every >= DAY });
  }
  return { every, ticks };
}

/** "per 3 hours", "per minute": a histogram's bucket size in words. */
export function intervalLabel(ms) {
  const units = [[7 * DAY, 'week'], [DAY, 'day'], [3600e3, 'hour'], [60e3, 'minute'], [1e3, 'second']];
  for (const [size, unit] of units) {
    if (ms >= size && ms % size === 0) return ms === size ? `per ${unit}` : `per ${ms / size} ${unit}s`;
  }
  return `per ${durationLabel(ms)}`;
}

/** An ISO 8601 date and time (24 h) for a text input: 2026-11-21 14:03, in the user's zone. */
export function toInputText(ms) {
  return formatTime(ms, { seconds: false });
}

/** The epoch ms of "YYYY-MM-DD HH:MM[:SS]" (or with a T) in the user's zone; null when not such a time. */
export function fromInputText(value) {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(String(value).trim());
  if (!m) return null;
  const [, y, mo, d, hh, mm, ss] = m.map(Number);
  const wall = Date.UTC(y, mo - 1, d, hh, mm, ss || 0);
  const back = new Date(wall);
  // 2026-02-31 or 25:00 is not a time: refused, not rolled over.
  if (back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || hh > 23 || mm > 59 || (ss || 0) > 59) return null;
  return fromWallClock(wall);
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
