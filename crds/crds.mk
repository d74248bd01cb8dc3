# The OracleNode CRD and its reference page, generated from the config model (scripts/generate-crd.ts).
.PHONY: generate
generate: install ## Regenerate crds/oracle-node.io_oraclenodes.yaml and docs/crd-reference.md
	node --import tsx scripts/generate-crd.ts

.PHONY: check-generated
check-generated: install ## Fail when the committed CRD or CRD reference differs from a fresh generation
	node --import tsx scripts/generate-crd.ts --check
