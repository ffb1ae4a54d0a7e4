// Command childname reads a JSON array of [parent, suffix] pairs on stdin and writes, for each, the
// name knative.dev/pkg's kmeta.ChildName gives: the name Knative Serving gives a Configuration's
// Revision (suffix "-%05d" of the Configuration's generation) and other child objects. Its output is
// committed as test vectors (tests/fixtures/knative_child_names.json) that flyte-apps must agree with.
package main

import (
	"encoding/json"
	"os"

	"knative.dev/pkg/kmeta"
)

type childName struct {
	Parent string `json:"parent"`
	Suffix string `json:"suffix"`
	Name   string `json:"name"`
}

func main() {
	var pairs [][2]string
	if err := json.NewDecoder(os.Stdin).Decode(&pairs); err != nil {
		panic(err)
	}
	names := make([]childName, 0, len(pairs))
	for _, pair := range pairs {
		names = append(names, childName{Parent: pair[0], Suffix: pair[1], Name: kmeta.ChildName(pair[0], pair[1])})
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(names); err != nil {
		panic(err)
	}
}
