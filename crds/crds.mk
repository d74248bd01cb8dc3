# The OracleNode CRD and its reference page, generated from the config model (scripts/generate-crd.ts), and the chart's
# RBAC rules, generated from the table of the operator's API calls (scripts/generate-chart-rbac.ts).
.PHONY: generate
generate: install ## Regenerate crds/oracle-node.io_oraclenodes.yaml, docs/crd-reference.md and the chart's RBAC rules
	node --import tsx scripts/generate-crd.ts
	node --import tsx scripts/generate-chart-rbac.ts

.PHONY: check-generated
check-generated: install ## Fail when the committed CRD, CRD reference or chart RBAC rules differ from a fresh generation
	node --import tsx scripts/generate-crd.ts --check
	node --import tsx scripts/generate-chart-rbac.ts --check
