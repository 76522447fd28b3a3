package gen

import (
	"github.com/fsmgen/fsmgen/dsl"
)

// upgrades is the []runtime.Upgrade literal of m's upgrade
// declarations, each rule of the older version's states in the order they
// are tried, the implicit ones (a state kept by name) written out.
func (t *table) upgrades(m *dsl.Machine) *lit {
	var out []litElem
	for _, mg := range m.Upgrades {
		d := []litElem{
			field("Type", expr("Type")),
			field("From", literal(mg.From.Version)),
			field("To", expr("Version")),
		}
		if mg.Drain {
			d = append(d, field("Drain", literal(true)))
		}
		var rules []litElem
		for _, r := range mg.Rules {
			rd := []litElem{field("From", literal(r.From.Name))}
			if r.Drain {
				rd = append(rd, field("Drain", literal(true)))
			} else {
				rd = append(rd, field("To", literal(r.To.Name)))
			}
			if r.When != nil {
				rd = append(rd, field("When", literal(r.When.Name)))
				if r.Unless {
					rd = append(rd, field("Unless", literal(true)))
				}
			}
			if r.Timers != "" {
				rd = append(rd, field("Timers", t.rt(map[string]string{"keep": "TimersKeep", "restart": "TimersRestart"}[r.Timers])))
			}
			rules = append(rules, elem(composite("", rd...)))
		}
		if len(rules) > 0 {
			d = append(d, field("Rules", compositeLines("[]runtime.UpgradeRule", rules...)))
		}
		var defaults []litElem
		for _, fd := range mg.Defaults {
			t.imports[jsonPath] = true
			defaults = append(defaults, elem(composite("",
				field("Event", literal(fd.Event.Name)),
				field("Field", literal(fd.Field.Name)),
				field("Value", expr("json.RawMessage("+literal(string(fd.Value)).expr+")")),
			)))
		}
		if len(defaults) > 0 {
			d = append(d, field("Defaults", compositeLines("[]runtime.FieldDefault", defaults...)))
		}
		out = append(out, elem(compositeLines("", d...)))
	}
	return compositeLines("[]runtime.Upgrade", out...)
}
