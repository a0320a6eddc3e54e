// Drives `scry mcp` with the official TypeScript MCP client (npm @modelcontextprotocol/sdk, in
// build/node_modules: scripts/install-deps.sh mcp) for tests/e2e/test_mcp.py.
// Usage: node mcp_client.mjs NODE_MODULES PLAN.json; PLAN as tests/e2e/mcp_client.py reads it.
// Prints one JSON document: {"server", "tools", "results"}; a call that throws gives
// {"error_code", "message"}.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [modules, planPath] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const plan = JSON.parse(readFileSync(planPath, 'utf8'));
const transport = new StdioClientTransport({
  command: plan.command, args: plan.args, env: plan.env, stderr: 'pipe',
});
let stderr = '';
transport.stderr?.on('data', (d) => { stderr += d; });
const client = new Client({ name: 'scry-tests', version: '0' });
await client.connect(transport);
const out = { server: client.getServerVersion(), results: [] };
await client.ping();
out.tools = (await client.listTools()).tools;
for (const call of plan.calls) {
  try {
    const r = await client.callTool({ name: call.name, arguments: call.arguments });
    out.results.push({
      is_error: !!r.isError,
      text: r.content.filter((c) => c.type === 'text').map((c) => c.text).join(''),
      structured: r.structuredContent ?? null,
    });
  } catch (e) {
    out.results.push({ error_code: e.code ?? null, message: String(e.message) });
  }
}
await client.close();
out.stderr = stderr;
console.log(JSON.stringify(out));
