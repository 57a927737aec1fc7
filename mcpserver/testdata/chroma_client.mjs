// An MCP client written against Chroma's MCP tool shapes, run with the official Node SDK
// (@modelcontextprotocol/sdk) against `memory serve --mcp` (stdio) or --mcp-http
// (streamable HTTP). Driven by mcpserver's TestNodeSDKClient.
//
// Usage: node chroma_client.mjs SDK_DIR stdio MEMORY_BIN STORE_DIR SOP_DIR
//        node chroma_client.mjs SDK_DIR http URL TOKEN
// SDK_DIR is the installed package (.deps/node/node_modules/@modelcontextprotocol/sdk).
// It prints "ok <transport> <steps> steps" and exits 0, or prints the failed step and exits 1.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, kind, ...rest] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(join(sdkDir, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");

let transport;
if (kind === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  const [bin, store, sops] = rest;
  transport = new StdioClientTransport({
    command: bin,
    args: ["serve", "--store", store, "--mcp", "--sops", sops],
    stderr: "inherit",
  });
} else if (kind === "http") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  throw new Error(`unknown transport ${kind}`);
}

let steps = 0;
function check(cond, what, got) {
  if (!cond) {
    throw new Error(`${what}: got ${JSON.stringify(got)}`);
  }
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const client = new Client({ name: "chroma-style-agent", version: "1.0.0" });
await client.connect(transport);

// call runs a tool and returns its structured content (the SDK checks it against the
// tool's output schema); a tool error fails the script unless wantError names the cap.
async function call(name, args, wantError) {
  steps++;
  const res = await client.callTool({ name, arguments: args });
  const text = (res.content ?? []).map((c) => c.text ?? "").join("");
  if (wantError) {
    check(res.isError === true && text.includes(wantError), `${name}: want a tool error naming ${wantError}`, text);
    return null;
  }
  check(!res.isError, `${name} failed`, text);
  check(res.structuredContent !== undefined, `${name}: no structured content`, res);
  return res.structuredContent;
}

const tools = (await client.listTools()).tools.map((t) => t.name);
for (const t of [
  "chroma_list_collections", "chroma_create_collection", "chroma_peek_collection", "chroma_get_collection_info",
  "chroma_get_collection_count", "chroma_modify_collection", "chroma_delete_collection", "chroma_add_documents",
  "chroma_query_documents", "chroma_get_documents", "chroma_update_documents", "chroma_delete_documents",
  "memory_search",
]) {
  check(tools.includes(t), `tool ${t} listed`, tools);
}

const col = "agent_kb";
await call("chroma_create_collection", { collection_name: col, metadata: undefined, space: "cosine" });
let r = await call("chroma_list_collections", {});
check(r.collections.includes(col), "list collections", r);

r = await call("chroma_add_documents", {
  collection_name: col,
  documents: [
    "Deploy the service with kubectl apply after the image is built.",
    "Python is a dynamically typed language used for scripting.",
    "Go is a statically typed language; deploy Go binaries as one file.",
    "Bananas are yellow fruit rich in potassium.",
  ],
  ids: ["deploy", "python", "go", "banana"],
  metadatas: [
    { topic: "ops", year: 2024 }, { topic: "lang", year: 2019 },
    { topic: "lang", year: 2023 }, { topic: "food", year: 2020 },
  ],
});
check(r.added === 4, "add", r);

r = await call("chroma_get_collection_count", { collection_name: col });
check(r.count === 4, "count", r);

r = await call("chroma_peek_collection", { collection_name: col, limit: 2 });
check(same(r.ids, ["banana", "deploy"]) && r.documents.length === 2 && r.metadatas[0].topic === "food", "peek", r);

r = await call("chroma_get_collection_info", { collection_name: col });
check(r.name === col && r.count === 4 && r.analyzer === "en" && r.sample_documents.ids.length === 3, "info", r);

r = await call("chroma_query_documents", {
  collection_name: col,
  query_texts: ["deploy", "typed language"],
  n_results: 3,
  where: { year: { $gte: 2020 } },
  where_document: { $not_contains: "kubectl" },
  include: ["documents", "metadatas", "distances"],
});
check(same(r.ids, [["go"], ["go"]]), "query ids", r);
check(r.documents[0][0].startsWith("Go is") && r.metadatas[1][0].topic === "lang", "query documents and metadatas", r);
check(typeof r.distances[0][0] === "number" && r.embeddings === null, "query distances, no embeddings", r);

r = await call("chroma_query_documents", {
  collection_name: col,
  query_texts: ["deploy"],
  where_document: { $or: [{ $contains: "kubectl" }, { $contains: "Bananas" }] },
});
check(same(r.ids, [["deploy"]]), "query where_document $or", r);

r = await call("chroma_get_documents", { collection_name: col, ids: ["python", "deploy"], include: ["documents"] });
check(same(r.ids, ["python", "deploy"]) && r.documents[0].startsWith("Python") && r.metadatas === null, "get by ids", r);

r = await call("chroma_get_documents", { collection_name: col, where: { topic: "lang" }, limit: 1, offset: 1 });
check(same(r.ids, ["python"]), "get by where, limit, offset", r);

r = await call("chroma_update_documents", {
  collection_name: col, ids: ["banana"], documents: ["Plantains are starchy cooking bananas."], metadatas: [{ year: 2025 }],
});
check(r.updated === 1, "update", r);
r = await call("chroma_get_documents", { collection_name: col, ids: ["banana"] });
check(r.documents[0].startsWith("Plantains") && r.metadatas[0].topic === "food" && r.metadatas[0].year === 2025, "get after update", r);

// Collection metadata, and modify: rename, query by the new name, the old name is a tool
// error; then back under the old name.
await call("chroma_create_collection", { collection_name: "meta_kb", metadata: { purpose: "gold", version: 2, curated: true } });
r = await call("chroma_get_collection_info", { collection_name: "meta_kb" });
check(r.metadata.purpose === "gold" && r.metadata.version === 2 && r.metadata.curated === true && Object.keys(r.metadata).length === 3, "info metadata", r);
await call("chroma_create_collection", { collection_name: "de_kb", analyzer: "de" });
r = await call("chroma_get_collection_info", { collection_name: "de_kb" });
check(r.analyzer === "de", "info analyzer", r);
await call("chroma_delete_collection", { collection_name: "de_kb" });
const q = { query_texts: ["deploy", "typed language"], n_results: 3 };
const before = await call("chroma_query_documents", { collection_name: col, ...q });
r = await call("chroma_modify_collection", { collection_name: col, new_name: "renamed", new_metadata: { owner: "ops" } });
check(r.collection === "renamed", "modify: rename", r);
r = await call("chroma_query_documents", { collection_name: "renamed", ...q });
check(same(r.ids, before.ids) && same(r.distances, before.distances), "query by the new name", { r, before });
await call("chroma_query_documents", { collection_name: col, ...q }, "not found");
r = await call("chroma_get_collection_info", { collection_name: "renamed" });
check(r.count === 4 && r.metadata.owner === "ops", "info after modify", r);
await call("chroma_modify_collection", { collection_name: "renamed", new_name: "meta_kb" }, "already exists");
await call("chroma_modify_collection", { collection_name: "renamed", new_metadata: { bad: { nested: 1 } } }, "invalid metadata");
await call("chroma_modify_collection", { collection_name: "renamed", new_name: col });
r = await call("chroma_list_collections", {});
check(r.collections.includes(col) && !r.collections.includes("renamed"), "list after renaming back", r);
await call("chroma_delete_collection", { collection_name: "meta_kb" });

// Hostile arguments: each a tool error naming its cap, nothing changed.
let deep = { topic: "x" };
for (let i = 0; i < 45; i++) deep = { $or: [deep] };
await call("chroma_query_documents", { collection_name: col, query_texts: ["x"], where: deep }, "MaxArgDepth");
await call("chroma_get_documents", { collection_name: col, ids: Array.from({ length: 2000 }, (_, i) => `id${i}`) }, "MaxGetIDs");
await call("chroma_query_documents", { collection_name: col, query_texts: Array(100).fill("q") }, "MaxQueries");
await call("chroma_delete_documents", { collection_name: col, ids: ["x".repeat(1_500_000)] }, "MaxArgBytes");
r = await call("chroma_get_collection_count", { collection_name: col });
check(r.count === 4, "count after hostile calls", r);

r = await call("chroma_delete_documents", { collection_name: col, where: { topic: "lang" } });
check(r.deleted === 2 && same(r.ids, ["go", "python"]), "delete by where", r);
r = await call("chroma_delete_documents", { collection_name: col, ids: ["deploy"] });
check(r.deleted === 1, "delete by ids", r);
r = await call("chroma_get_collection_count", { collection_name: col });
check(r.count === 1, "count after delete", r);

// Documents as resources, procedures as prompts.
steps++;
const listed = await client.listResources();
const uri = listed.resources.map((x) => x.uri).find((u) => u.startsWith(`memory://${col}/`));
check(uri === `memory://${col}/banana`, "resources/list", listed);
const read = await client.readResource({ uri });
check(read.contents[0].text.startsWith("Plantains"), "resources/read", read);
const templates = await client.listResourceTemplates();
check(templates.resourceTemplates.some((t) => t.uriTemplate === "memory://{collection}/{id}"), "resource templates", templates);
steps++;
const prompts = await client.listPrompts();
check(prompts.prompts.some((p) => p.name === "deploy_service"), "prompts/list", prompts);
const prompt = await client.getPrompt({ name: "deploy_service", arguments: { task: "ship v2" } });
check(prompt.messages.length === 3 && prompt.messages[1].content.text === "Step 1 of 2: Build the image.", "prompts/get", prompt);

r = await call("chroma_delete_collection", { collection_name: col });
r = await call("chroma_list_collections", {});
check(!r.collections.includes(col), "collection deleted", r);

await client.close();
console.log(`ok ${kind} ${steps} steps`);
