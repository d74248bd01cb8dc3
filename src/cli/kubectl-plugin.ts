#!/usr/bin/env node
// `kubectl oracle-node <command>`: kubectl runs kubectl-oracle_node from the PATH with the arguments after the
// plugin name, which is exactly what the binary takes.
import './index.js';
