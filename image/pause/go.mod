module oracle-node-operator.local/image/pause

go 1.24
