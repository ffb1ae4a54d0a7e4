// spec-judge writes flyteidl2.app.Spec messages the way Flyte's Go app service does: proto.Marshal
// of google.golang.org/protobuf (the version upstream's go.mod pins), with maps sorted by key
// (Deterministic, the one order Go can be held to). It knows the messages only from a
// FileDescriptorSet it is given (dynamicpb), so a field left out of that set stays an unknown field,
// as it is to upstream's older generated code.
//
// Usage: spec-judge -descriptors set.binpb [-message flyteidl2.app.Spec] < specs
// Each input line is a standard base64 serialization of the message, in any field order; each output
// line is Go's serialization of the same message, in standard base64. A line that does not decode is
// an error naming its line number.
package main

import (
	"bufio"
	"encoding/base64"
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

const maxLine = 16 << 20

func main() {
	descriptors := flag.String("descriptors", "", "a serialized google.protobuf.FileDescriptorSet")
	message := flag.String("message", "flyteidl2.app.Spec", "the full name of the message each line holds")
	flag.Parse()
	if err := run(*descriptors, protoreflect.FullName(*message)); err != nil {
		fmt.Fprintln(os.Stderr, "spec-judge:", err)
		os.Exit(1)
	}
}

func run(descriptors string, name protoreflect.FullName) error {
	raw, err := os.ReadFile(descriptors)
	if err != nil {
		return err
	}
	set := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(raw, set); err != nil {
		return fmt.Errorf("%s: %w", descriptors, err)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return fmt.Errorf("%s: %w", descriptors, err)
	}
	found, err := files.FindDescriptorByName(name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	described, ok := found.(protoreflect.MessageDescriptor)
	if !ok {
		return fmt.Errorf("%s is not a message", name)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 64<<10), maxLine)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	line := 0
	for in.Scan() {
		line++
		data, err := base64.StdEncoding.DecodeString(in.Text())
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		msg := dynamicpb.NewMessage(described)
		if err := proto.Unmarshal(data, msg); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		again, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		fmt.Fprintln(out, base64.StdEncoding.EncodeToString(again))
	}
	return in.Err()
}
