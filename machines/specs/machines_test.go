package specs_test

// machines are the directories of machines/specs, in the README's order.
var machines = []string{"sipinvite", "deviceauth", "usbdevice", "tcpconn", "dhcpclient"}
