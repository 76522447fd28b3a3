package specs_test

// machines are the directories of machines/specs, in the README's order.
var machines = []string{"sipinvite", "deviceauth", "usbdevice", "tcpconn", "dhcpclient"}

// parallelMachines are the directories of machines/specs whose machines
// have parallel regions. They have no flat .fsm file, and the reference
// model does not run them: their packages replay their traces on the
// generated code and the engine, TestXStateTraces from their xstate.json,
// TestSCXMLTraces and TestXStateExportTraces from the exports of their
// .fsm file, and TestImportXState imports their xstate.json.
var parallelMachines = []string{"mediaelement", "podlifecycle"}
