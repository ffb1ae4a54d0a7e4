// Command judge reads a JSON array of strings on stdin and writes, for each, whether Kubernetes'
// own validators (k8s.io/apimachinery) and the image reference parser the kubelet uses
// (github.com/distribution/reference) accept it, and for a quantity the text resource.Quantity writes
// back (String; MarshalJSON must agree). Its output is committed as test vectors
// (tests/fixtures/kube_validation_vectors.json) that flyte-apps' validators must agree with.
package main

import (
	_ "crypto/sha256" // the kubelet links both, and go-digest knows an algorithm only when linked
	_ "crypto/sha512"
	"encoding/json"
	"os"
	"strconv"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

type verdict struct {
	Input            string `json:"input"`
	QualifiedName    bool   `json:"qualifiedName"`
	LabelValue       bool   `json:"labelValue"`
	DNS1123Label     bool   `json:"dns1123Label"`
	DNS1123Subdomain bool   `json:"dns1123Subdomain"`
	EnvVarName       bool   `json:"envVarName"`
	Quantity         bool   `json:"quantity"`
	Canonical        string `json:"canonical,omitempty"`
	Image            bool   `json:"image"`
}

func main() {
	var inputs []string
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		panic(err)
	}
	verdicts := make([]verdict, 0, len(inputs))
	for _, s := range inputs {
		quantity, quantityErr := resource.ParseQuantity(s)
		canonical := ""
		if quantityErr == nil {
			canonical = quantity.String()
			encoded, err := json.Marshal(quantity)
			if err != nil || string(encoded) != strconv.Quote(canonical) {
				panic("MarshalJSON and String disagree on " + strconv.Quote(s) + ": " + string(encoded))
			}
		}
		_, imageErr := reference.ParseNormalizedNamed(s)
		verdicts = append(verdicts, verdict{
			Input:            s,
			QualifiedName:    len(validation.IsQualifiedName(s)) == 0,
			LabelValue:       len(validation.IsValidLabelValue(s)) == 0,
			DNS1123Label:     len(validation.IsDNS1123Label(s)) == 0,
			DNS1123Subdomain: len(validation.IsDNS1123Subdomain(s)) == 0,
			EnvVarName:       len(validation.IsEnvVarName(s)) == 0,
			Quantity:         quantityErr == nil,
			Canonical:        canonical,
			Image:            imageErr == nil,
		})
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	encoder.SetIndent("", " ")
	if err := encoder.Encode(verdicts); err != nil {
		panic(err)
	}
}
