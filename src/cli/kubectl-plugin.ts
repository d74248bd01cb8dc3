#!/usr/bin/env node
// `kubectl oracle-node <command>`: kubectl runs kubectl-oracle_node from the PATH with the arguments after the
// plugin name, which is exactly what the binary takes. index.js imports only the version check statically, so an
// old Node.js gets its one line here too.
import './index.js';
