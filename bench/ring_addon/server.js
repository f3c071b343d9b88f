// bench/ring_addon.py's server: node with the napi_resolver addon. A worker
// thread calls resolve() nonstop; the main thread makes one slow call
// (resolve(k, 20): about 20 ms) every 200 ms, N times, then stops the
// worker and prints "slow calls N, worker calls M".
//   node server.js ADDON.node [N]
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');

if (isMainThread) {
  const addonPath = process.argv[2];
  const n = Number(process.argv[3] || 15);
  const addon = require(addonPath);
  const shared = new Int32Array(new SharedArrayBuffer(8));
  const w = new Worker(__filename, { workerData: { addonPath, shared } });
  let k = 0;
  const timer = setInterval(() => {
    addon.resolve(k, 20);
    if (++k === n) {
      clearInterval(timer);
      Atomics.store(shared, 0, 1);
    }
  }, 200);
  w.on('message', (calls) => {
    console.log(`slow calls ${k}, worker calls ${calls > 0 ? 'many' : 'none'}`);
  });
} else {
  const addon = require(workerData.addonPath);
  let i = 0;
  while (Atomics.load(workerData.shared, 0) === 0)
    addon.resolve(i++, 0);
  parentPort.postMessage(i);
}
