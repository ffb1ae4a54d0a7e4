// The Go consumer template: a program that registers nothing. A test copies this directory, adds a
// package (`pulumi package add`) and writes its own main.go.
package main

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

func main() {
	pulumi.Run(func(*pulumi.Context) error { return nil })
}
