module oracle-node-operator.local/test/tools/argocd-lua

go 1.24.0

require github.com/yuin/gopher-lua v1.1.2
