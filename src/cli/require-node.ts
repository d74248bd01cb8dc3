// Imported first by the binary's entry, before any module that needs a recent Node.js is evaluated.
import { unsupportedNode } from './node-version.js';

const problem = unsupportedNode(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
