// anthropic-sdk-typescript (`@anthropic-ai/sdk`) over every catalog scenario, each on a stage
// of its own: a streamed Messages loop that answers tool uses, bounded by the client's wait.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { BOUND_MS, GUARD_MS, USER, bound, describeError, record, scenarios, stage } from './lib/stuntset.mjs';

const CLIENT = 'anthropic-sdk-typescript';

async function play(urls, wait) {
  const client = new Anthropic({ baseURL: urls.anthropic, apiKey: 'test', maxRetries: 2 });
  const messages = [{ role: 'user', content: USER }];
  let text = '';
  for (let round = 0; round < 4; round += 1) {
    const stream = await client.messages.create(
      { model: 'claude-test', max_tokens: 256, messages, stream: true },
      { signal: wait.signal },
    );
    const blocks = [];
    let stop = null;
    let last = '';
    for await (const event of stream) {
      if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block, json: '' };
      else if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        blocks[event.index].text += event.delta.text;
        text += event.delta.text;
        last += event.delta.text;
      } else if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta') {
        blocks[event.index].json += event.delta.partial_json;
      } else if (event.type === 'message_delta') stop = event.delta.stop_reason ?? stop;
    }
    if (stop === null) {
      const why = wait.fired ? `the client's ${BOUND_MS / 1000} s bound aborted it` : 'the stream ended';
      return ['cut', `${why}: no stop_reason, no error (${text.length} chars kept)`];
    }
    if (stop !== 'tool_use') return ['completed', `${stop} after ${round + 1} response(s): ${JSON.stringify(last.slice(0, 40))}`];
    const content = blocks.filter(Boolean).map((b) =>
      b.type === 'tool_use'
        ? { type: 'tool_use', id: b.id, name: b.name, input: b.json ? JSON.parse(b.json) : {} }
        : { type: 'text', text: b.text },
    );
    messages.push({ role: 'assistant', content });
    messages.push({
      role: 'user',
      content: content
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: 'ok' })),
    });
  }
  return ['completed', 'tool uses for 4 rounds'];
}

for (const scenario of await scenarios()) {
  test(scenario.name, { timeout: GUARD_MS + 10_000 }, async () => {
    let where;
    try {
      where = await stage({ scenario: scenario.name });
    } catch (error) {
      record(CLIENT, scenario.name, 'refused', describeError(error).replace(/^Error: /, ''));
      assert.equal(scenario.name, 'spawn_missing'); // the one no model wire plays
      return;
    }
    const wait = bound(scenario.name === 'stuck' ? BOUND_MS : GUARD_MS);
    let outcome;
    try {
      outcome = await play(where.urls, wait);
    } catch (error) {
      outcome = [wait.fired ? 'bounded' : 'error', describeError(error)];
    } finally {
      wait.clear();
    }
    record(CLIENT, scenario.name, ...outcome);
    assert.ok((await where.journal()).count >= 1, 'the stage saw the request');
    await where.delete();
  });
}
