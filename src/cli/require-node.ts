// The only static import of the binary's entry (index.ts): it and node-version.ts must link and run on any
// Node.js, so they import nothing else.
import { unsupportedNode } from './node-version.js';

const problem = unsupportedNode(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
