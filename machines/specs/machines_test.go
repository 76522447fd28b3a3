package specs_test

// machines are the directories of machines/specs, in the README's order.
var machines = []string{"sipinvite", "deviceauth", "usbdevice", "tcpconn", "dhcpclient"}

// parallelMachines are the directories of machines/specs whose machines
// have parallel regions. They have no .fsm file: TestXStateTraces replays
// them from their xstate.json, TestSCXMLTraces and TestXStateExportTraces
// from the exports of the same machines in dsl/testdata/parallel.
var parallelMachines = []string{"mediaelement", "podlifecycle"}
