package ebpfprofilerreceiver

import (
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// profileSummary is what a user of the pipeline sees in a batch: which processes, which
// functions, how many samples.
type profileSummary struct {
	samples   int                      // CPU samples (aggregated records weighted by their count)
	pids      map[int64]int            // process.pid -> samples
	functions map[int64]map[string]int // process.pid -> function name -> samples with it on the stack
}

func summarize(pd pprofile.Profiles) profileSummary {
	s := profileSummary{pids: map[int64]int{}, functions: map[int64]map[string]int{}}
	dict := pd.Dictionary()
	strs := dict.StringTable()
	str := func(i int32) string {
		if i <= 0 || int(i) >= strs.Len() {
			return ""
		}
		return strs.At(int(i))
	}
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		pid := int64(-1)
		if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
			pid = v.Int()
		}
		if s.functions[pid] == nil {
			s.functions[pid] = map[string]int{}
		}
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				samples := profs.At(k).Samples()
				for l := 0; l < samples.Len(); l++ {
					smp := samples.At(l)
					n := int(sampleWeight(smp))
					s.samples += n
					s.pids[pid] += n
					seen := map[string]bool{}
					si := smp.StackIndex()
					if si <= 0 || int(si) >= dict.StackTable().Len() {
						continue
					}
					locs := dict.StackTable().At(int(si)).LocationIndices()
					for m := 0; m < locs.Len(); m++ {
						li := locs.At(m)
						if li <= 0 || int(li) >= dict.LocationTable().Len() {
							continue
						}
						lines := dict.LocationTable().At(int(li)).Lines()
						for o := 0; o < lines.Len(); o++ {
							fi := lines.At(o).FunctionIndex()
							if fi <= 0 || int(fi) >= dict.FunctionTable().Len() {
								continue
							}
							name := str(dict.FunctionTable().At(int(fi)).NameStrindex())
							if name != "" && !seen[name] {
								seen[name] = true
								s.functions[pid][name] += n
							}
						}
					}
				}
			}
		}
	}
	return s
}

// functionsMatching lists the functions of pid whose name contains sub, for messages.
func (s profileSummary) functionsMatching(pid int64, sub string) []string {
	var out []string
	for name := range s.functions[pid] {
		if strings.Contains(name, sub) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// topFunctions lists up to n functions of pid, most frequent first, for failure messages.
func (s profileSummary) topFunctions(pid int64, n int) []string {
	var names []string
	for name := range s.functions[pid] {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return s.functions[pid][names[i]] > s.functions[pid][names[j]]
	})
	if len(names) > n {
		names = names[:n]
	}
	return names
}

// makeProfiles builds a batch with one process, one stack of the given functions (leaf
// first) and n samples, encoded as the library would send it.
func makeProfiles(pid int64, n int, funcs ...string) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	dict := pd.Dictionary()
	dict.StringTable().Append("")
	dict.FunctionTable().AppendEmpty()
	dict.LocationTable().AppendEmpty()
	dict.MappingTable().AppendEmpty()
	dict.StackTable().AppendEmpty()
	dict.AttributeTable().AppendEmpty()
	dict.LinkTable().AppendEmpty()
	stack := dict.StackTable().AppendEmpty()
	for _, name := range funcs {
		dict.StringTable().Append(name)
		fn := dict.FunctionTable().AppendEmpty()
		fn.SetNameStrindex(int32(dict.StringTable().Len() - 1))
		loc := dict.LocationTable().AppendEmpty()
		loc.Lines().AppendEmpty().SetFunctionIndex(int32(dict.FunctionTable().Len() - 1))
		stack.LocationIndices().Append(int32(dict.LocationTable().Len() - 1))
	}
	rp := pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutInt("process.pid", pid)
	prof := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for i := 0; i < n; i++ {
		smp := prof.Samples().AppendEmpty()
		smp.SetStackIndex(1)
		smp.Values().Append(1)
	}
	return pd
}

func encode(pd pprofile.Profiles) []byte {
	var m pprofile.ProtoMarshaler
	buf, err := m.MarshalProfiles(pd)
	if err != nil {
		panic(err)
	}
	return buf
}
