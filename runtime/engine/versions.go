package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fsmgen/fsmgen/runtime"
	"github.com/fsmgen/fsmgen/runtime/internal/enginestore"
)

// registerUpgrades registers the upgrades into def's version whose
// older version is registered in the database (by this process or
// another): without runs of an older version there is nothing to move.
func (e *Engine) registerUpgrades(ctx context.Context, def runtime.Definition) error {
	for _, m := range def.Upgrades {
		if _, err := e.st.Definition(ctx, m.Type, m.From); errors.Is(err, runtime.ErrUnknownDefinition) {
			continue
		} else if err != nil {
			return err
		}
		if err := e.st.RegisterUpgrade(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// upgradeDefaults indexes the payload defaults of the upgrades into
// r's version.
func (r *registered) upgradeDefaults() {
	r.defaults = map[string][]runtime.FieldDefault{}
	for _, m := range r.def.Upgrades {
		if m.Drain {
			continue
		}
		r.upgraded = true
		for _, d := range m.Defaults {
			r.defaults[d.Event] = append(r.defaults[d.Event], d)
		}
	}
}

// decodeLogged decodes an event from a run's log. A run upgraded from an
// older version carries events logged under it: their payloads get the
// upgrade's defaults for the fields they lack, and, when they still do
// not decode, lose the fields the newer event no longer has.
func decodeLogged(reg *registered, name string, payload []byte) (runtime.Event, error) {
	if ds := reg.defaults[name]; len(ds) > 0 && len(payload) > 0 {
		payload = withDefaults(payload, ds)
	}
	ev, err := decode(reg, name, payload)
	if err != nil && reg.upgraded && len(payload) > 0 {
		if pruned, ok := withoutUnknown(payload, reg.fields[name]); ok {
			if ev2, err2 := decode(reg, name, pruned); err2 == nil {
				return ev2, nil
			}
		}
	}
	return ev, err
}

// withDefaults adds the defaults' fields that payload, a JSON object,
// lacks; it returns payload as it is when it is no object or lacks none.
func withDefaults(payload []byte, ds []runtime.FieldDefault) []byte {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
		return payload
	}
	added := false
	for _, d := range ds {
		if _, ok := obj[d.Field]; !ok {
			obj[d.Field] = d.Value
			added = true
		}
	}
	if !added {
		return payload
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return payload
	}
	return out
}

// withoutUnknown drops the fields of payload, a JSON object, that are not
// in fields; ok is false when there were none to drop.
func withoutUnknown(payload []byte, fields map[string]bool) ([]byte, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
		return nil, false
	}
	dropped := false
	for k := range obj {
		if !fields[k] {
			delete(obj, k)
			dropped = true
		}
	}
	if !dropped {
		return nil, false
	}
	out, err := json.Marshal(obj)
	return out, err == nil
}

// Deregister stops the engine from driving runs of (typ, version): its
// workers no longer claim them, and Start, Signal and Cancel refuse them.
// It is refused, with an error matching runtime.ErrLiveRuns, while runs of
// that version are live in the database: upgrade them to a newer version
// (fsmctl versions upgrade) or let them finish first. The definition stays
// registered in the database, for the history of its runs.
func (e *Engine) Deregister(ctx context.Context, typ string, version int) error {
	op := fmt.Sprintf("deregister %s v%d", typ, version)
	if e.lookup(typ, version) == nil {
		return runErr(op, "", fmt.Errorf("%w: %s v%d", runtime.ErrNotRegistered, typ, version))
	}
	n, err := e.st.LiveRuns(ctx, typ, version)
	if err != nil {
		return err
	}
	if n > 0 {
		return runErr(op, "", fmt.Errorf("%w: %d runs of %s v%d are not finished; upgrade them (fsmctl versions plan %s %d N) or let them drain (fsmctl versions status %s) first",
			runtime.ErrLiveRuns, n, typ, version, typ, version, typ))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.kinds, enginestore.Kind{Type: typ, Version: version})
	if e.latest[typ] == version {
		delete(e.latest, typ)
		for k := range e.kinds {
			if k.Type == typ && k.Version > e.latest[typ] {
				e.latest[typ] = k.Version
			}
		}
	}
	return nil
}

// notRegistered is the error of a run of (typ, version) that the engine
// does not drive, saying what to do about it.
func (e *Engine) notRegistered(typ string, version int) error {
	e.mu.RLock()
	latest, known := e.latest[typ]
	e.mu.RUnlock()
	switch {
	case !known:
		return fmt.Errorf("%w: %s v%d; register its machine's driver with Register", runtime.ErrNotRegistered, typ, version)
	case version < latest:
		return fmt.Errorf("%w: %s v%d (this engine drives v%d); keep registering v%d's driver beside v%d until its runs drain, or upgrade them: fsmctl versions plan %s %d %d",
			runtime.ErrNotRegistered, typ, version, latest, version, latest, typ, version, latest)
	default:
		return fmt.Errorf("%w: %s v%d (this engine drives up to v%d); deploy the release that registers v%d",
			runtime.ErrNotRegistered, typ, version, latest, version)
	}
}
