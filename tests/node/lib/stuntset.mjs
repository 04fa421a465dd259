// The Node tier's side of stuntset: the control API of a running `stuntset serve`
// (STUNTSET_URL) and the fake CLIs installed by `stuntset cli install` (STUNTSET_BIN), plus the
// bound every scenario runs under and the outcome file the pytest driver reads
// (STUNTSET_NODE_RESULTS). Nothing here knows a scenario: each one is asked of the server.
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BASE = process.env.STUNTSET_URL ?? 'http://127.0.0.1:8000';
const BIN = process.env.STUNTSET_BIN ?? 'stuntset';
// how long a client waits before it gives up by itself (a correct client bounds its wait)
export const BOUND_MS = Number(process.env.STUNTSET_NODE_BOUND_MS ?? 2500);
// the bound of every other scenario: a hang guard (they all end by themselves)
export const GUARD_MS = 20_000;

async function control(method, path, body) {
  const response = await fetch(`${BASE}/_stuntset${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) {
    throw new Error(`${method} /_stuntset${path}: ${response.status} ${data.error.message}`);
  }
  return data;
}

/** Every catalog scenario, with its parameters (GET /_stuntset/scenarios). */
export async function scenarios() {
  return (await control('GET', '/scenarios')).scenarios;
}

/** A stage of its own for one test: `{ id, urls, ... }`, deleted by `stage.delete()`. */
export async function stage(body) {
  const made = await control('POST', '/stages', body);
  return {
    ...made,
    journal: () => control('GET', `/stages/${made.id}/journal`),
    verify: (allow = false) => control('POST', `/stages/${made.id}/verify`, { allow_unused_turns: allow }),
    delete: () => control('DELETE', `/stages/${made.id}`),
  };
}

/** `stuntset cli install <program>` into a fresh folder: `{ path, spawnable, ... }`. */
export function installFake(program, scenario, params = {}) {
  const dir = mkdtempSync(join(tmpdir(), `stuntset-node-${program}-`));
  const args = ['cli', 'install', program, '--scenario', scenario, '--dir', dir, '--json'];
  for (const [key, value] of Object.entries(params)) args.push('--param', `${key}=${value}`);
  const info = JSON.parse(execFileSync(BIN, args, { encoding: 'utf8' }));
  return {
    ...info,
    invocations: () =>
      execFileSync(BIN, ['cli', 'invocations', program, '--dir', dir], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
  };
}

/** A one-line, stable account of an error: its class, status, and the start of its message. */
export function describeError(error) {
  const name = error?.constructor?.name ?? typeof error;
  const status = error?.status ? ` ${error.status}` : '';
  const message = String(error?.message ?? error)
    .split('\n')[0]
    .replace(/request id: \S+/g, 'request id: <id>');
  return `${name}${status}: ${message.slice(0, 70)}`;
}

/** Record what `client` saw on `scenario` (one JSON line for the pytest driver). */
export function record(client, scenario, outcome, detail) {
  const line = JSON.stringify({ client, scenario, outcome, detail });
  if (process.env.STUNTSET_NODE_RESULTS) appendFileSync(process.env.STUNTSET_NODE_RESULTS, line + '\n');
  return { outcome, detail };
}

/** An AbortSignal that fires after the bound, and whether it did. */
export function bound(ms) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  return {
    controller,
    signal: controller.signal,
    get fired() {
      return controller.signal.aborted;
    },
    clear: () => clearTimeout(timer),
  };
}

export const USER = 'Please help.';
