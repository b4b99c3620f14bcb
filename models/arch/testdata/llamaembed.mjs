// llamaembed.mjs MODEL.gguf '[id, ...]': llama.cpp's embedding of the token
// ids, as the model pools them (its pooling_type), not normalized. Prints
// {"pooling": ..., "n_embd": N, "embedding": [...]} on stdout.
//
// It uses the node-llama-cpp that llamaref installs in $LLAMAREF_HOME
// (default ~/.cache/llamaref): run llamaref once first. Flash attention is
// off and the whole input is one batch, so nothing rounds K or V.
//
// node-llama-cpp's getEmbeddingFor puts the vocabulary's BOS ([CLS]) in
// front and its SEP or EOS at the end when the ids lack them; callers pass
// ids that already have them.
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modelPath, idsJSON] = process.argv.slice(2);
if (!modelPath || !idsJSON) {
    process.stderr.write("usage: node llamaembed.mjs MODEL.gguf '[id, ...]'\n");
    process.exit(2);
}
const home = process.env.LLAMAREF_HOME || path.join(os.homedir(), ".cache", "llamaref");
const entry = path.join(home, "node_modules", "node-llama-cpp", "dist", "index.js");
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);

const ids = JSON.parse(idsJSON);
const llama = await getLlama({
    gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
    progressLogs: false, logLevel: LlamaLogLevel.warn, maxThreads: 2,
});
const model = await llama.loadModel({ modelPath, gpuLayers: 0, defaultContextFlashAttention: false });
const size = Math.max(64, ids.length + 16);
const ctx = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads: 2 });
const { vector } = await ctx.getEmbeddingFor(ids);
const pooling = model.fileInfo?.metadata?.[model.fileInfo.metadata.general.architecture]?.pooling_type ?? null;
process.stdout.write(JSON.stringify({ pooling, n_embd: vector.length, embedding: Array.from(vector) }) + "\n");
await ctx.dispose();
await model.dispose();
