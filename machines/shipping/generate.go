package shipping

//go:generate go tool fsmgen shipment.fsm
