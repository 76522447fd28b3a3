package gen

import (
	"strconv"
)

// upgrades writes the Upgrades field of the definition at indent: the
// []runtime.Upgrade literal of the machine's upgrade declarations, each
// rule of the older version's states in the order they are tried, the
// implicit ones (a state kept by name) written out.
func (g *goGen) upgrades(indent int) {
	f := g.f
	f.line(indent, "Upgrades: []runtime.Upgrade{")
	for _, mg := range g.m.Upgrades {
		f.line(indent+1, "{")
		f.line(indent+2, "Type: Type,")
		f.line(indent+2, "From: ", strconv.Itoa(mg.From.Version), ",")
		f.line(indent+2, "To: Version,")
		if mg.Drain {
			f.line(indent+2, "Drain: true,")
		}
		var rules []string
		for _, r := range mg.Rules {
			rd := []string{"From: " + strconv.Quote(r.From.Name)}
			if r.Drain {
				rd = append(rd, "Drain: true")
			} else {
				rd = append(rd, "To: "+strconv.Quote(r.To.Name))
			}
			if r.When != nil {
				rd = append(rd, "When: "+strconv.Quote(r.When.Name))
				if r.Unless {
					rd = append(rd, "Unless: true")
				}
			}
			if r.Timers != "" {
				rd = append(rd, "Timers: runtime."+map[string]string{"keep": "TimersKeep", "restart": "TimersRestart"}[r.Timers])
			}
			rules = append(rules, lit(rd))
		}
		if len(rules) > 0 {
			f.list(indent+2, "Rules: []runtime.UpgradeRule", rules, ",")
		}
		var defaults []string
		for _, fd := range mg.Defaults {
			defaults = append(defaults, lit([]string{
				"Event: " + strconv.Quote(fd.Event.Name),
				"Field: " + strconv.Quote(fd.Field.Name),
				"Value: " + f.use("encoding/json") + ".RawMessage(" + strconv.Quote(string(fd.Value)) + ")",
			}))
		}
		if len(defaults) > 0 {
			f.list(indent+2, "Defaults: []runtime.FieldDefault", defaults, ",")
		}
		f.line(indent+1, "},")
	}
	f.line(indent, "},")
}
