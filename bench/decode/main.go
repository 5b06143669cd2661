// Command decode reads a profile written by one of the benchmarked profilers and prints its
// samples as JSON lines that bench/harness.py analyses:
//
//	{"pid":1,"tid":1,"comm":"x","count":3,"frames":[{"fn":"hot_a","file":"/path","addr":4660},...]}
//
// frames run leaf first. Formats: pprof (google/pprof; gzipped or not), otlp (an OTLP
// ExportProfilesServiceRequest in protobuf, decoded with pdata), otlp-json (the collector file
// exporter's JSON lines, decoded with pdata). The last line is {"summary":...}.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

type frame struct {
	Fn   string `json:"fn"`
	File string `json:"file,omitempty"`
	Addr uint64 `json:"addr,omitempty"`
}

type sample struct {
	Pid    int64   `json:"pid"`
	Tid    int64   `json:"tid"`
	Comm   string  `json:"comm"`
	Count  int64   `json:"count"`
	Frames []frame `json:"frames"`
}

type summary struct {
	Samples  int64  `json:"samples"`
	Profiles int    `json:"profiles"`
	FirstNs  uint64 `json:"first_sample_ns"`
	Format   string `json:"format"`
}

var out = bufio.NewWriterSize(os.Stdout, 1<<20)

func emit(v any) {
	b, _ := json.Marshal(v)
	out.Write(b)
	out.WriteByte('\n')
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: decode pprof|otlp|otlp-json FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "decode: cannot read %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	var sum summary
	sum.Format = os.Args[1]
	switch os.Args[1] {
	case "pprof":
		err = decodePprof(data, &sum)
	case "otlp":
		req := pprofileotlp.NewExportRequest()
		if err = req.UnmarshalProto(data); err == nil {
			decodeOTLP(req.Profiles(), &sum)
		}
	case "otlp-json":
		var u pprofile.JSONUnmarshaler
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			p, e := u.UnmarshalProfiles(sc.Bytes())
			if e != nil {
				err = e
				break
			}
			decodeOTLP(p, &sum)
		}
		if err == nil {
			err = sc.Err()
		}
	default:
		err = fmt.Errorf("unknown format %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "decode: %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	emit(map[string]any{"summary": sum})
	out.Flush()
}

func decodePprof(data []byte, sum *summary) error {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return err
	}
	sum.Profiles = 1
	for _, s := range p.Sample {
		var o sample
		if len(s.Value) > 0 {
			o.Count = s.Value[0]
		}
		for k, v := range s.NumLabel {
			if len(v) == 0 {
				continue
			}
			switch {
			case strings.Contains(k, "tid") || k == "thread.id" || k == "thread_id":
				o.Tid = v[0]
			case strings.Contains(k, "pid"):
				o.Pid = v[0]
			}
		}
		for k, v := range s.Label {
			if len(v) == 0 {
				continue
			}
			switch {
			case strings.Contains(k, "pid"):
				o.Pid, _ = strconv.ParseInt(v[0], 10, 64)
			case strings.Contains(k, "tid") || k == "thread.id":
				o.Tid, _ = strconv.ParseInt(v[0], 10, 64)
			case strings.Contains(k, "comm") || strings.Contains(k, "thread") ||
				strings.Contains(k, "executable.name"):
				if o.Comm == "" || strings.Contains(k, "comm") || strings.Contains(k, "thread") {
					o.Comm = v[0]
				}
			}
		}
		for _, loc := range s.Location {
			file := ""
			addr := loc.Address
			if loc.Mapping != nil {
				file = loc.Mapping.File
				if addr >= loc.Mapping.Start && loc.Mapping.Start != 0 {
					addr = addr - loc.Mapping.Start + loc.Mapping.Offset
				}
			}
			if len(loc.Line) == 0 {
				o.Frames = append(o.Frames, frame{File: file, Addr: addr})
				continue
			}
			// pprof lists inlined callees first
			for _, ln := range loc.Line {
				name := ""
				if ln.Function != nil {
					name = ln.Function.Name
				}
				o.Frames = append(o.Frames, frame{Fn: name, File: file, Addr: addr})
			}
		}
		sum.Samples += o.Count
		emit(o)
	}
	return nil
}

func attrString(v pcommon.Value) string {
	return v.AsString()
}

func decodeOTLP(pd pprofile.Profiles, sum *summary) {
	dict := pd.Dictionary()
	strs := dict.StringTable()
	str := func(i int32) string {
		if i >= 0 && int(i) < strs.Len() {
			return strs.At(int(i))
		}
		return ""
	}
	attrs := dict.AttributeTable()
	locs := dict.LocationTable()
	funcs := dict.FunctionTable()
	maps := dict.MappingTable()
	stacks := dict.StackTable()
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		var pid int64
		comm := ""
		rp.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
			switch k {
			case "process.pid":
				pid = v.Int()
			case "process.executable.name":
				comm = v.AsString()
			}
			return true
		})
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				sum.Profiles++
				prof := profs.At(k)
				samples := prof.Samples()
				// a value in nanoseconds of CPU is turned into a count of periods
				perNs := int64(0)
				if str(prof.SampleType().UnitStrindex()) == "nanoseconds" && prof.Period() > 0 {
					perNs = prof.Period()
				}
				for n := 0; n < samples.Len(); n++ {
					s := samples.At(n)
					o := sample{Pid: pid, Comm: comm}
					vals := s.Values()
					ts := s.TimestampsUnixNano()
					switch {
					case vals.Len() > 0:
						for v := 0; v < vals.Len(); v++ {
							o.Count += vals.At(v)
						}
						if perNs > 0 {
							o.Count = (o.Count + perNs/2) / perNs
						}
					default:
						o.Count = int64(ts.Len())
					}
					for t := 0; t < ts.Len(); t++ {
						if sum.FirstNs == 0 || ts.At(t) < sum.FirstNs {
							sum.FirstNs = ts.At(t)
						}
					}
					ai := s.AttributeIndices()
					for a := 0; a < ai.Len(); a++ {
						idx := int(ai.At(a))
						if idx < 0 || idx >= attrs.Len() {
							continue
						}
						kv := attrs.At(idx)
						key := str(kv.KeyStrindex())
						switch key {
						case "thread.id":
							o.Tid = kv.Value().Int()
						case "thread.name":
							o.Comm = attrString(kv.Value())
						case "process.pid":
							o.Pid = kv.Value().Int()
						}
					}
					si := int(s.StackIndex())
					if si >= 0 && si < stacks.Len() {
						li := stacks.At(si).LocationIndices()
						for l := 0; l < li.Len(); l++ {
							x := int(li.At(l))
							if x < 0 || x >= locs.Len() {
								continue
							}
							loc := locs.At(x)
							file := ""
							if mi := int(loc.MappingIndex()); mi > 0 && mi < maps.Len() {
								file = str(maps.At(mi).FilenameStrindex())
							}
							lines := loc.Lines()
							if lines.Len() == 0 {
								o.Frames = append(o.Frames, frame{File: file, Addr: loc.Address()})
								continue
							}
							for ln := 0; ln < lines.Len(); ln++ {
								name := ""
								if fi := int(lines.At(ln).FunctionIndex()); fi >= 0 && fi < funcs.Len() {
									name = str(funcs.At(fi).NameStrindex())
								}
								o.Frames = append(o.Frames, frame{Fn: name, File: file, Addr: loc.Address()})
							}
						}
					}
					sum.Samples += o.Count
					emit(o)
				}
			}
		}
	}
}
