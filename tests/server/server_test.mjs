// tandem serve through OpenAI's official client: every check prints PASS or FAIL, and the process
// exits 1 if any failed. Run by server_test.sh, which starts the server and passes:
//   --url URL --key KEY --pid PID --model ID --system TEXT --user TEXT --reference FILE
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' }, key: { type: 'string' }, pid: { type: 'string' }, model: { type: 'string' },
    system: { type: 'string' }, user: { type: 'string' }, reference: { type: 'string' },
    'load-requests': { type: 'string', default: process.env.LOAD_REQUESTS ?? '200' },
    'load-clients': { type: 'string', default: '8' },
    'no-rss-check': { type: 'boolean', default: false },
  },
});
const base = args.url;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: args.key, maxRetries: 0, timeout: 60_000 });
const model = args.model;
const messages = [{ role: 'system', content: args.system }, { role: 'user', content: args.user }];
// run --chat printed the reply and one newline.
const reference = readFileSync(args.reference, 'utf8').replace(/\n$/, '');

let failures = 0;
function check(name, ok, detail = '') {
  console.log(`${ok ? 'PASS' : 'FAIL'}: ${name}${ok || !detail ? '' : ` (${detail})`}`);
  if (!ok) failures++;
}
async function expectError(name, promise, status, code, param) {
  try {
    await promise;
    check(name, false, 'accepted');
  } catch (e) {
    const ok = e.status === status && (code === undefined || e.code === code) && (param === undefined || e.param === param);
    check(name, ok, `status ${e.status} code ${e.code} param ${e.param}: ${e.message}`);
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const health = async () => (await fetch(`${base}/health`)).json();
async function metrics() {
  const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${args.key}` } })).text();
  const m = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    m[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return m;
}
async function idle(ms = 5000) {
  const until = Date.now() + ms;
  for (;;) {
    const h = await health();
    if (h.slots_processing === 0 && h.requests_queued === 0) return true;
    if (Date.now() > until) return false;
    await sleep(20);
  }
}
const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${args.pid}/status`, 'utf8'))[1]);
async function streamText(params, options) {
  const stream = await client.chat.completions.create({ ...params, stream: true }, options);
  let text = '', finish = null, role = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role) role = c.delta.role;
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, role, usage, chunks };
}
const greedy = { model, temperature: 0 };

// --- the endpoints
{
  const h = await health();
  check('/health is ok with 4 idle slots', h.status === 'ok' && h.slots === 4 && h.slots_idle === 4, JSON.stringify(h));
  const list = await client.models.list();
  check('/v1/models lists the model', list.data.length === 1 && list.data[0].id === model, JSON.stringify(list.data));
  const one = await client.models.retrieve(model);
  check('/v1/models/{id}', one.id === model && one.object === 'model');
}

// --- chat: whole, streamed, as run --chat
let replyTokens = 0;
{
  const r = await client.chat.completions.create({ ...greedy, messages, max_tokens: 24 });
  const c = r.choices[0];
  check('chat: greedy reply equals run --chat', c.message.content === reference,
        `${JSON.stringify(c.message.content)} vs ${JSON.stringify(reference)}`);
  check('chat: object, role, finish reason', r.object === 'chat.completion' && c.message.role === 'assistant' &&
        ['stop', 'length'].includes(c.finish_reason) && r.id.startsWith('chatcmpl-') && r.model === model);
  check('chat: usage adds up', r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0 &&
        r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, JSON.stringify(r.usage));
  replyTokens = r.usage.completion_tokens;
  const s = await streamText({ ...greedy, messages, max_tokens: 24, stream_options: { include_usage: true } });
  check('chat stream: the same text', s.text === reference, JSON.stringify(s.text));
  check('chat stream: role first, finish reason last, usage chunk',
        s.role === 'assistant' && s.finish === c.finish_reason && s.usage?.completion_tokens === replyTokens &&
        s.chunks > 3, JSON.stringify(s));
}
{
  const r = await client.chat.completions.create({ ...greedy, messages, max_tokens: 5 });
  check('chat: max_tokens ends with length', r.choices[0].finish_reason === 'length' && r.usage.completion_tokens === 5,
        JSON.stringify(r.choices[0]) + JSON.stringify(r.usage));
  const cut = reference.indexOf(' ', 6);
  const stop = reference.slice(cut, cut + 3);
  const stopped = await client.chat.completions.create({ ...greedy, messages, max_tokens: 24, stop: [stop] });
  check('chat: a stop string ends the reply right before it', stopped.choices[0].message.content ===
        reference.slice(0, reference.indexOf(stop)) && stopped.choices[0].finish_reason === 'stop',
        JSON.stringify(stopped.choices[0]) + ' stop ' + JSON.stringify(stop));
  const sampled = { model, messages, max_tokens: 16, temperature: 1.0, seed: 1234 };
  const a = await client.chat.completions.create(sampled), b = await client.chat.completions.create(sampled);
  check('chat: the same seed samples the same reply', a.choices[0].message.content === b.choices[0].message.content);
}
{
  // The next turn extends the conversation: its slot's cache holds the first turn.
  const first = await client.chat.completions.create({ ...greedy, messages, max_tokens: 12 });
  const turn2 = [...messages, first.choices[0].message, { role: 'user', content: 'And then?' }];
  const second = await client.chat.completions.create({ ...greedy, messages: turn2, max_tokens: 12 });
  const cached = second.usage.prompt_tokens_details?.cached_tokens ?? 0;
  check('chat: the next turn reuses the cached prefix', cached >= first.usage.prompt_tokens,
        `cached ${cached}, first prompt ${first.usage.prompt_tokens}`);
}

// --- completions
{
  const r = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 16 });
  check('completions: text and usage', r.object === 'text_completion' && r.choices[0].text.length > 0 &&
        r.usage.completion_tokens > 0, JSON.stringify(r));
  const stream = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 16, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  check('completions stream: the same text', text === r.choices[0].text, JSON.stringify(text));
  const echo = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 16, echo: true });
  check('completions: echo leads with the prompt', echo.choices[0].text === 'Once upon a time' + r.choices[0].text);
}

// --- several at once: each as it is alone, decode rows batched
{
  const prompts = ['Once upon a time', 'The little dog', 'Lily went to the park', 'Tom had a ball', 'One day',
                   'The sun was hot'];
  const ask = (p) => client.chat.completions.create({ ...greedy, messages: [{ role: 'user', content: p }], max_tokens: 32 });
  const alone = [];
  for (const p of prompts) alone.push((await ask(p)).choices[0].message.content);
  const before = await metrics();
  const together = await Promise.all(prompts.map(ask));
  const after = await metrics();
  check('concurrent: 6 requests on 4 slots answer as each does alone',
        together.every((r, i) => r.choices[0].message.content === alone[i]));
  const rows = after.tandem_decode_rows_total - before.tandem_decode_rows_total;
  const passes = after.tandem_forward_passes_total - before.tandem_forward_passes_total;
  check('concurrent: decode steps were batched (rows per pass > 1)', rows > passes, `rows ${rows}, passes ${passes}`);
  check('concurrent: no slot left busy', await idle());
}

// --- disconnects free the slot
{
  const long = { model, messages, max_tokens: 2000, ignore_eos: true, temperature: 0 };
  let before = await metrics();
  const controller = new AbortController();
  const stream = await client.chat.completions.create({ ...long, stream: true }, { signal: controller.signal });
  try {
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) controller.abort();
    }
  } catch { /* the abort */ }
  check('disconnect (stream): the slot is freed', await idle());
  let after = await metrics();
  check('disconnect (stream): counted as cancelled',
        after.tandem_generations_cancelled_total === before.tandem_generations_cancelled_total + 1);

  before = after;
  const c2 = new AbortController();
  const pending = client.chat.completions.create(long, { signal: c2.signal }).catch(() => null);
  await sleep(100);
  c2.abort();
  await pending;
  check('disconnect (whole answer): the slot is freed', await idle());
  after = await metrics();
  check('disconnect (whole answer): counted as cancelled',
        after.tandem_generations_cancelled_total === before.tandem_generations_cancelled_total + 1);
}

// --- bad requests: OpenAI's error objects, the right statuses, and the server goes on
{
  const wrongKey = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await expectError('bad key: 401', wrongKey.chat.completions.create({ ...greedy, messages }), 401, 'invalid_api_key');
  await expectError('unknown model: 404', client.chat.completions.create({ model: 'gpt-9', messages }), 404,
                    'model_not_found', 'model');
  await expectError('wrong type: 400 names the field',
                    client.chat.completions.create({ model, messages, temperature: 'hot' }), 400, 'invalid_type',
                    'temperature');
  await expectError('n of 2: 400', client.chat.completions.create({ model, messages, n: 2 }), 400,
                    'unsupported_parameter', 'n');
  await expectError('no messages: 400', client.chat.completions.create({ model }), 400, 'missing_required_parameter');
  await expectError('a message without a role: 400',
                    client.chat.completions.create({ model, messages: [{ content: 'x' }] }), 400, undefined, 'messages');
  await expectError('prompt past the context: 400',
                    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'a b '.repeat(20000) }] }),
                    400, 'context_length_exceeded');
  const raw = async (path, body, headers = {}) => {
    const r = await fetch(`${base}${path}`, {
      method: 'POST', body, headers: { Authorization: `Bearer ${args.key}`, 'Content-Type': 'application/json', ...headers },
    });
    let j = null;
    try { j = await r.json(); } catch { /* not JSON */ }
    return { status: r.status, j };
  };
  let r = await raw('/v1/chat/completions', '{"messages": [');
  check('malformed JSON: 400 with an error object', r.status === 400 && typeof r.j?.error?.message === 'string', JSON.stringify(r));
  r = await raw('/v1/chat/completions', 'x'.repeat(9 << 20));
  check('a body over 8 MiB: 413 with an error object', r.status === 413 && r.j?.error?.code === 'request_too_large', JSON.stringify(r));
  r = await raw('/v1/nothing', '{}');
  check('unknown URL: 404 with an error object', r.status === 404 && r.j?.error?.code === 'unknown_url', JSON.stringify(r));
  const h = await fetch(`${base}/health`);
  check('/health needs no key', h.status === 200);
  const m = await fetch(`${base}/metrics`);
  check('/metrics needs the key', m.status === 401);
  const after = await client.chat.completions.create({ ...greedy, messages, max_tokens: 24 });
  check('after the bad requests the server answers as before', after.choices[0].message.content === reference);
}

// --- load: N requests from C concurrent clients, all answered, no slot leaked, RSS stable
{
  const total = Number(args['load-requests']), clients = Number(args['load-clients']);
  const prompts = ['Once', 'The cat', 'A girl', 'Tom', 'The sun', 'One day', 'Lily', 'A dog'];
  const latencies = [];
  let next = 0, errors = 0, rssWarm = 0;
  const warmAt = Math.floor(total / 5);
  const started = Date.now();
  async function worker(w) {
    while (next < total) {
      const i = next++;
      if (i === warmAt) rssWarm = rssKiB();
      const t0 = performance.now();
      try {
        const p = { model, messages: [{ role: 'user', content: prompts[i % prompts.length] }], max_tokens: 8 + (i % 9),
                    temperature: 0.8, seed: i };
        if (i % 2) {
          const s = await streamText(p);
          if (!s.finish) throw new Error('no finish reason');
        } else {
          const r = await client.chat.completions.create(p);
          if (!r.choices[0].finish_reason) throw new Error('no finish reason');
        }
        latencies.push(performance.now() - t0);
      } catch (e) {
        errors++;
        console.log(`load: request ${i} failed: ${e.message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, w) => worker(w)));
  const seconds = (Date.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  const rssEnd = rssKiB();
  const summary = { requests: total, concurrency: clients, answered: latencies.length, errors,
                    seconds: +seconds.toFixed(2), requests_per_second: +(total / seconds).toFixed(1),
                    p50_ms: +pct(0.5).toFixed(1), p99_ms: +pct(0.99).toFixed(1), max_ms: +latencies.at(-1).toFixed(1),
                    rss_kib_after_warmup: rssWarm, rss_kib_end: rssEnd };
  console.log('load: ' + JSON.stringify(summary));
  check(`load: ${total} requests from ${clients} clients all answered`, errors === 0 && latencies.length === total);
  check('load: no slot leaked, nothing queued', await idle());
  if (args['no-rss-check']) {
    console.log('SKIP: load: RSS under the sanitizers (ASan quarantines freed memory)');
  } else {
    check('load: RSS stable (grew < 16 MiB after warm-up)', rssEnd - rssWarm < 16 * 1024, `${rssWarm} -> ${rssEnd} KiB`);
  }
  const m = await metrics();
  check('load: /metrics counted every chat request',
        m['tandem_requests_total{endpoint="/v1/chat/completions",code="200"}'] >= total);
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
