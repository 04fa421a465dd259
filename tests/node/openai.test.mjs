// openai-node (the `openai` package) over every catalog scenario, each on a stage of its own:
// a streamed Chat Completions loop that answers tool calls, bounded by the client's own wait.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { BOUND_MS, GUARD_MS, USER, bound, describeError, record, scenarios, stage } from './lib/stuntset.mjs';

const CLIENT = 'openai-node';

async function play(urls, wait) {
  const client = new OpenAI({ baseURL: urls.openai, apiKey: 'test', maxRetries: 2 });
  const messages = [{ role: 'user', content: USER }];
  let text = '';
  for (let round = 0; round < 4; round += 1) {
    const stream = await client.chat.completions.create(
      { model: 'gpt-test', messages, stream: true },
      { signal: wait.signal },
    );
    const calls = [];
    let finish = null;
    let said = '';
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      said += choice.delta?.content ?? '';
      for (const call of choice.delta?.tool_calls ?? []) {
        calls[call.index] ??= { id: call.id, name: '', args: '' };
        calls[call.index].name += call.function?.name ?? '';
        calls[call.index].args += call.function?.arguments ?? '';
      }
      finish = choice.finish_reason ?? finish;
    }
    text += said;
    if (finish === null) {
      const why = wait.fired ? `the client's ${BOUND_MS / 1000} s bound aborted it` : 'the stream ended';
      return ['cut', `${why}: no finish_reason, no error (${text.length} chars kept)`];
    }
    if (finish !== 'tool_calls') return ['completed', `${finish} after ${round + 1} response(s): ${JSON.stringify(said.slice(0, 40))}`];
    messages.push({
      role: 'assistant',
      content: said || null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } })),
    });
    for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: 'ok' });
  }
  return ['completed', 'tool calls for 4 rounds'];
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
    const journal = await where.journal();
    assert.ok(journal.count >= 1, 'the stage saw the request');
    await where.delete();
  });
}
