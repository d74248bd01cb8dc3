// Command kstatus prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status, the library behind Flux's health
// checks and `kubectl wait`-style readiness in cli-utils) computes for one Kubernetes object read as JSON on
// stdin: {"status": "Current|InProgress|Failed|Terminating|...", "message": "...", "conditions": [...]}.
// The integration tests run it over the OracleNodes of the test control plane (docs/gitops.md).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// version is stamped by test/cluster/build.sh with a checksum of this module, so a changed source is rebuilt.
var version = "dev"

// maxObjectBytes bounds what is read from stdin: an OracleNode is well below the apiserver's 1.5 MiB limit.
const maxObjectBytes = 4 << 20

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type result struct {
	Status     string      `json:"status"`
	Message    string      `json:"message"`
	Conditions []condition `json:"conditions"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(version)
		return
	}
	if len(os.Args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: kstatus < object.json")
		os.Exit(2)
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, maxObjectBytes+1))
	if err != nil || len(data) > maxObjectBytes {
		fmt.Fprintln(os.Stderr, "kstatus: cannot read the object from stdin (at most 4 MiB)")
		os.Exit(2)
	}
	// UnmarshalJSON keeps integers as int64, as the apiserver's own decoding does (kstatus compares generations).
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(data); err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: not a Kubernetes object: %v\n", err)
		os.Exit(2)
	}
	computed, err := status.Compute(object)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
		os.Exit(1)
	}
	out := result{Status: computed.Status.String(), Message: computed.Message, Conditions: []condition{}}
	for _, c := range computed.Conditions {
		out.Conditions = append(out.Conditions, condition{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
