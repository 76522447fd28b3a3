package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/fsmgen/fsmgen/dsl"
)

// migrationsCode is the []runtime.Migration literal of m's migrate
// declarations, each rule of the older version's states in the order they
// are tried, the implicit ones (a state kept by name) written out.
func migrationsCode(m *dsl.Machine) jen.Code {
	var out []jen.Code
	for _, mg := range m.Migrations {
		d := []jen.Code{
			kv("Type", jen.Id("Type")),
			kv("From", jen.Lit(mg.From.Version)),
			kv("To", jen.Id("Version")),
		}
		if mg.Drain {
			d = append(d, kv("Drain", jen.True()))
		}
		var rules []jen.Code
		for _, r := range mg.Rules {
			rd := []jen.Code{kv("From", jen.Lit(r.From.Name))}
			if r.Drain {
				rd = append(rd, kv("Drain", jen.True()))
			} else {
				rd = append(rd, kv("To", jen.Lit(r.To.Name)))
			}
			if r.When != nil {
				rd = append(rd, kv("When", jen.Lit(r.When.Name)))
				if r.Unless {
					rd = append(rd, kv("Unless", jen.True()))
				}
			}
			if r.Timers != "" {
				rd = append(rd, kv("Timers", rt(map[string]string{"keep": "TimersKeep", "restart": "TimersRestart"}[r.Timers])))
			}
			rules = append(rules, jen.Values(rd...))
		}
		if len(rules) > 0 {
			d = append(d, kv("Rules", jen.Index().Add(rt("MigrationRule")).Values(lines(rules)...)))
		}
		var defaults []jen.Code
		for _, fd := range mg.Defaults {
			defaults = append(defaults, jen.Values(
				kv("Event", jen.Lit(fd.Event.Name)),
				kv("Field", jen.Lit(fd.Field.Name)),
				kv("Value", jen.Qual("encoding/json", "RawMessage").Call(jen.Lit(string(fd.Value)))),
			))
		}
		if len(defaults) > 0 {
			d = append(d, kv("Defaults", jen.Index().Add(rt("FieldDefault")).Values(lines(defaults)...)))
		}
		out = append(out, jen.Values(lines(d)...))
	}
	return jen.Index().Add(rt("Migration")).Values(lines(out)...)
}
