// gjson_locate evaluates KEDA metrics-api `valueLocation` expressions the way KEDA's scaler does,
// with the same library (github.com/tidwall/gjson, Debian's golang-github-tidwall-gjson-dev):
// gjson.GetBytes on the response body. For each expression given after the JSON file it prints one
// JSON line: whether the location found something, its GJSON type and its raw JSON text. KEDA then
// takes a number as is, parses a string as a Kubernetes Quantity, and fails on anything else
// (nothing found is a Null result: an error, never a zero).
//
// Usage: gjson_locate FILE EXPRESSION...
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/tidwall/gjson"
)

type located struct {
	Exists bool   `json:"exists"`
	Type   string `json:"type"`
	Raw    string `json:"raw"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gjson_locate FILE EXPRESSION...")
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := json.NewEncoder(os.Stdout)
	for _, expression := range os.Args[2:] {
		r := gjson.GetBytes(body, expression)
		if err := out.Encode(located{r.Exists(), r.Type.String(), r.Raw}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
