// Package shipping is a machine in the middle of a change: Shipment
// version 2 (package shipment) weighs every parcel between packing and
// labelling and no longer holds parcels for customs, and version 1
// (package shipmentv1, the machine ShipmentV1 of the same shipment.fsm)
// is kept beside it while runs of it live. shipment.fsm declares how
// those runs move to version 2 ("upgrade from 1 { ... }"), which fsmgen
// check proves strands no run; Register drives both versions in one
// engine; fsmctl versions plan, upgrade and status move and count them.
// The tests walk the whole change: runs in every state of version 1
// (waiting, retrying, leased, held), planned, upgraded, resumed after a
// killed upgrade, and finished on version 2.
package shipping
