package ebpfprofilerreceiver

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// msg appends field num as a length-delimited submessage or string.
func msg(b []byte, num protowire.Number, body []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, body)
}

func varint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// request builds an ExportProfilesServiceRequest with one resource whose attributes are
// process.pid=4321 and process.executable.name="busy", written with plain keys (KeyValue.key=1,
// AnyValue.string_value=1) or through the dictionary (key_strindex=3,
// string_value_strindex=8), the two forms the OTLP profiles spec allows.
func request(strindex bool) []byte {
	var pidKV, nameKV []byte
	if strindex {
		pidKV = varint(nil, 3, 1)
		pidKV = msg(pidKV, 2, varint(nil, 3, 4321))
		nameKV = varint(nil, 3, 2)
		nameKV = msg(nameKV, 2, varint(nil, 8, 3))
	} else {
		pidKV = msg(nil, 1, []byte("process.pid"))
		pidKV = msg(pidKV, 2, varint(nil, 3, 4321))
		nameKV = msg(nil, 1, []byte("process.executable.name"))
		nameKV = msg(nameKV, 2, msg(nil, 1, []byte("busy")))
	}
	resource := msg(msg(nil, 1, pidKV), 1, nameKV)
	sample := varint(nil, 4, 1) // values=[1]
	profile := msg(nil, 2, sample)
	scope := msg(nil, 2, profile)
	rp := msg(msg(nil, 1, resource), 2, scope)

	var dict []byte
	for _, s := range []string{"", "process.pid", "process.executable.name", "busy"} {
		dict = msg(dict, 5, []byte(s))
	}
	return msg(msg(nil, 1, rp), 2, dict)
}

// The shim decodes with pprofile.ProtoUnmarshaler; the otlp receiver (what a gateway runs)
// decodes with pprofileotlp.ExportRequest. Both must see the same resource attributes,
// whichever form the C encoder writes.
func TestDecodeResourceAttributes(t *testing.T) {
	for _, strindex := range []bool{false, true} {
		name := map[bool]string{false: "plain keys", true: "strindex"}[strindex]
		t.Run(name, func(t *testing.T) {
			buf := request(strindex)
			pd, err := decodeProfiles(buf)
			if err != nil {
				t.Fatal(err)
			}
			req := pprofileotlp.NewExportRequest()
			if err := req.UnmarshalProto(buf); err != nil {
				t.Fatal(err)
			}
			for dname, d := range map[string]pprofile.Profiles{"ProtoUnmarshaler": pd,
				"ExportRequest": req.Profiles()} {
				if d.ResourceProfiles().Len() != 1 || d.SampleCount() != 1 {
					t.Fatalf("%s: %d resources, %d samples", dname,
						d.ResourceProfiles().Len(), d.SampleCount())
				}
				attrs := d.ResourceProfiles().At(0).Resource().Attributes()
				if v, ok := attrs.Get("process.pid"); !ok || v.Int() != 4321 {
					t.Errorf("%s: process.pid = %v (%v), attrs %v", dname, v.AsRaw(), ok, attrs.AsRaw())
				}
				if v, ok := attrs.Get("process.executable.name"); !ok || v.Str() != "busy" {
					t.Errorf("%s: process.executable.name = %v, attrs %v", dname, v.AsRaw(), attrs.AsRaw())
				}
			}
			// And what the shim forwards survives the next hop (pdata re-encodes for OTLP).
			again, err := decodeProfiles(encode(pd))
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := again.ResourceProfiles().At(0).Resource().Attributes().Get("process.pid"); v.Int() != 4321 {
				t.Errorf("re-encoded: process.pid = %v", v.AsRaw())
			}
		})
	}
}
