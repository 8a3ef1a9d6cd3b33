"""ISP / telecom: routers, modems, gateways, plans and outages."""

from __future__ import annotations

from .model import Archetype, Cause, Domain, Product, Step

FIBER = ("Fiber 300", "Fiber 500", "Fiber 1 Gig")
DSL = ("DSL Basic 25", "DSL Plus 80")
CABLE = ("Cable 200", "Cable 400")
G5 = ("5G Home Unlimited", "5G Home 100GB")


def S(canonical: str, *phrasings: str) -> Step:
    return Step(canonical, tuple(phrasings) or (canonical,))


def A(canonical: str, *phrasings: str) -> Step:
    """A step support carries out."""
    return Step(canonical, tuple(phrasings) or (canonical,), actor="agent")


REBOOT = S(
    "restart the {model} after the change",
    "restart the {model}",
    "power the {model} off for 30 seconds and back on",
    "reboot the {model} once that's done",
)
FIRMWARE = S(
    "update the firmware to {fix_version}",
    "update the firmware to {fix_version}",
    "flash firmware {fix_version} from the admin page",
    "install firmware {fix_version} under System > Firmware Update",
)

PRODUCTS = (
    Product("ax1800", "Netwave AX1800", "router", "Netwave", "NW", "my router", "NW-AX1800", ("1.1", "1.2"), FIBER + CABLE),
    Product("ax3000", "Netwave AX3000", "router", "Netwave", "NW", "my router", "NW-AX3000", ("1.2", "2.0"), FIBER + CABLE),
    Product("meshpro", "Crestline MeshPro 3", "mesh", "Crestline", "CM", "the mesh system", "CM-MP3", ("3.4", "3.6"), FIBER + CABLE),
    Product("dsl500", "Linkstar DSL500", "dsl", "Linkstar", "LS", "the modem", "LS-DSL500", ("5.1", "5.3"), DSL),
    Product("fg2100", "Linkstar FiberGate 2100", "ont", "Linkstar", "FG", "the fiber box", "FG-2100", ("2.0", "2.2"), FIBER),
    Product("hc31", "Homelink HC31 cable modem", "cable", "Homelink", "HL", "the cable modem", "HC-31", ("7.1", "7.4"), CABLE),
    Product("velox", "Velox 5G Home Hub", "5g", "Velox", "VX", "the 5G hub", "VX-5GH1", ("1.0", "1.3"), G5),
    Product("ax5400", "Netwave AX5400", "router", "Netwave", "NW", "my router", "NW-AX5400", ("2.0", "2.1"), FIBER + CABLE),
    Product("dsl700", "Linkstar DSL700", "dsl", "Linkstar", "LS", "the modem", "LS-DSL700", ("6.0", "6.2"), DSL),
    Product("hc40", "Homelink HC40 cable modem", "cable", "Homelink", "HL", "the cable modem", "HC-40", ("8.0", "8.2"), CABLE),
    Product("pocket", "Velox 5G Pocket Hotspot", "5g", "Velox", "VX", "the hotspot", "VX-P5", ("2.3", "2.5"), G5),
    Product("callbox", "Callbox VoIP adapter", "voip", "Callbox", "CB", "the phone adapter", "CB-200", ("4.2", "4.4"), FIBER + CABLE + DSL),
)

LINE = ("dsl", "ont", "cable", "5g")

ARCHETYPES = (
    Archetype(
        "evening_drops",
        "connection drops every evening",
        kinds=LINE + ("router",),
        says=(
            "[my|the] internet [drops|cuts out|goes down] every evening[ around 8pm|, usually after dinner|]",
            "{subj} loses the connection [several times|a few times|over and over] each night",
            "every [night|evening] the connection on {subj} [dies|disconnects] for [a minute|a few minutes] and comes back",
        ),
        ask=(
            "internet on {p} drops every evening",
            "{p} disconnects every night",
            "nightly connection drops with {p}",
        ),
        errors=(
            "WAN link down ({code})",
            "Line sync lost: {code}",
            "PPP session terminated ({code})",
        ),
        code_rate=0.75,
        causes=(
            Cause(
                "line noise lowering the signal-to-noise margin",
                (
                    "Your line's noise margin drops in the evening when more neighbours are online, and the modem loses sync",
                    "[The line|Your line] is noisy and the SNR margin falls too low at peak times",
                ),
                (
                    S("set the line profile to stable mode", "switch the DSL profile to Stable in the advanced settings", "change the line profile from Fast to Stable"),
                    S("replace the phone line filter", "swap the microfilter on the wall socket", "put a new line filter on the phone socket"),
                ),
                kinds=('dsl',),
            ),
            Cause(
                "firmware bug in the session keep-alive",
                (
                    "The firmware you're on has a bug in the session keep-alive that drops the link under load",
                    "[It's|This is] a firmware bug: the keep-alive timer expires when traffic is high",
                ),
                (
                    FIRMWARE,
                    REBOOT,
                ),
            ),
            Cause(
                "overheating because of blocked vents",
                (
                    "The unit overheats when it's busy and resets the link",
                    "[It's|This is] heat: with the vents blocked the {model} shuts the line down to protect itself",
                ),
                (
                    S("move the {model} somewhere with free airflow", "put the {model} in an open spot, not in a cabinet", "give the {model} space around the vents"),
                    REBOOT,
                ),
            ),
        ),
    ),
    Archetype(
        "slow_speed",
        "speeds far below the plan",
        kinds=("router", "mesh", "dsl", "ont", "cable", "5g"),
        says=(
            "I pay for {plan} but [only get|I'm getting|speed tests show] [around|about|like] {speed} Mbps",
            "speeds on {subj} are [terrible|way below what I pay for|crawling], [{speed} Mbps at best|maybe {speed} Mbps]",
            "[my|the] download speed [dropped|fell] to {speed} Mbps [since last week|out of nowhere]",
        ),
        ask=(
            "{p} only getting {speed} Mbps",
            "slow speeds with {p}, far below the plan",
            "{p} speed much lower than plan",
        ),
        errors=(),
        code_rate=0.0,
        causes=(
            Cause(
                "plan upgrade not provisioned on the line",
                (
                    "Your upgrade went through on the billing side but the line was never reprovisioned, so you're still capped at the old speed",
                    "The line profile still has your old speed tier",
                ),
                (
                    A("reprovision the line with the new speed tier", "reprovision your line with the correct speed tier", "push the new speed profile to your line"),
                    REBOOT,
                ),
            ),
            Cause(
                "damaged Ethernet cable limiting the link to 100 Mbps",
                (
                    "The Ethernet link is negotiating at 100 Mbps, which points to a damaged cable",
                    "[It's|This is] the cable: the port only links at 100 Mbps",
                ),
                (
                    S("replace the Ethernet cable with a Cat6 cable", "swap the network cable for a Cat6 one", "use a new Cat6 cable between the {model} and the computer"),
                ),
            ),
            Cause(
                "Wi-Fi channel congestion",
                (
                    "Your Wi-Fi sits on a crowded channel with all the neighbours",
                    "The wireless channel is congested, so the speed is lost over Wi-Fi",
                ),
                (
                    S("move the 5 GHz network to channel {channel}", "set the 5 GHz channel to {channel} in the wireless settings", "change the Wi-Fi channel to {channel}"),
                    REBOOT,
                ),
                params=(("channel", ("36", "44", "149")),),
                kinds=('router', 'mesh', '5g'),
            ),
        ),
    ),
    Archetype(
        "wifi_devices_drop",
        "Wi-Fi keeps disconnecting some devices",
        kinds=("router", "mesh", "5g"),
        says=(
            "[some of my|certain] devices keep [dropping off|disconnecting from] the Wi-Fi on {subj}",
            "{subj} kicks my [laptop|phone|smart TV] off the Wi-Fi [every hour|randomly|constantly]",
            "the Wi-Fi from {subj} is [flaky|unstable] for [some|older] devices while others are fine",
        ),
        ask=(
            "devices keep dropping off {p} Wi-Fi",
            "{p} Wi-Fi disconnects some devices",
            "unstable wifi on {p} for certain devices",
        ),
        errors=("Client deauthenticated (reason {code})",),
        code_rate=0.3,
        causes=(
            Cause(
                "band steering confusing older devices",
                (
                    "Band steering keeps pushing older devices between 2.4 and 5 GHz and they drop",
                    "Older devices don't cope with band steering",
                ),
                (
                    S("turn off band steering", "disable Smart Connect / band steering", "switch band steering off in the wireless settings"),
                    S("give the 2.4 GHz and 5 GHz networks separate names", "split the 2.4 and 5 GHz networks into two SSIDs", "use separate network names for each band"),
                ),
            ),
            Cause(
                "WPA3-only security mode",
                (
                    "The network was switched to WPA3 only, which some devices don't support",
                    "[It's|This is] the security mode: WPA3-only locks out older devices",
                ),
                (
                    S("set security to WPA2/WPA3 mixed mode", "change security to WPA2/WPA3 transitional", "switch the Wi-Fi security to mixed WPA2/WPA3"),
                ),
            ),
        ),
    ),
    Archetype(
        "red_light",
        "no internet with red light on the device",
        kinds=("dsl", "ont", "cable", "5g"),
        says=(
            "no internet at all and {subj} has a [red|blinking red] light",
            "the [LOS|internet|status] light on {subj} is [red|flashing red] and nothing works",
            "{subj} shows a red light and I have no connection since [this morning|yesterday]",
        ),
        ask=(
            "{p} red light, no internet",
            "no connection and {p} blinking red",
            "{p} LOS light red",
        ),
        errors=("No signal ({code})", "Link status: {code}"),
        code_rate=0.5,
        causes=(
            Cause(
                "bent or damaged fiber patch cable",
                (
                    "The red light means no optical signal; the patch cable is most likely bent or damaged",
                    "[A|The] fiber patch cable is damaged, so the box gets no light",
                ),
                (
                    S("check the fiber patch cable for sharp bends", "make sure the thin fiber cable isn't kinked", "straighten the fiber cable and reseat it"),
                    A("send a technician to replace the patch cable", "book a technician to replace the patch cable", "schedule a technician visit for a new patch cable"),
                ),
                kinds=('ont',),
            ),
            Cause(
                "area outage from a cut cable",
                (
                    "There's an outage in your area: a cable was cut during roadworks",
                    "[It's|This is] a local outage, a damaged cable in the street",
                ),
                (
                    S("wait for the outage repair", "wait until the repair crew is done", "hold on until the outage is fixed"),
                    A("credit the bill for the outage", "add a credit to your bill for the downtime", "apply an outage credit to your account"),
                ),
            ),
            Cause(
                "service suspended after a missed payment",
                (
                    "The line was suspended automatically after a missed payment",
                    "Your service was paused because the last bill wasn't paid",
                ),
                (
                    S("pay the outstanding balance", "settle the open balance", "pay the overdue bill"),
                    A("reactivate the line", "reactivate the line", "get your line reactivated"),
                ),
            ),
        ),
    ),
    Archetype(
        "admin_login",
        "cannot log in to the admin page",
        kinds=("router", "mesh", "dsl", "cable", "5g", "ont"),
        says=(
            "I can't [log in to|get into] the admin page of {subj}",
            "{subj} won't accept the admin password[ anymore|]",
            "the [setup|settings] page for {subj} [says wrong password|won't load]",
        ),
        ask=(
            "can't log into {p} admin page",
            "{p} admin password not accepted",
            "locked out of {p} settings page",
        ),
        errors=("Login failed ({code})", "Access denied: {code}"),
        code_rate=0.5,
        causes=(
            Cause(
                "admin password changed by the firmware update",
                (
                    "The firmware update replaced the admin password with the one printed on the label",
                    "After the update the admin password is the one on the sticker, not your old one",
                ),
                (
                    S("log in with the password on the device label", "use the admin password printed on the bottom label", "sign in with the label password"),
                ),
            ),
            Cause(
                "forgotten custom admin password",
                (
                    "The admin password was customised at some point and isn't known anymore",
                    "Someone set a custom password on it",
                ),
                (
                    S("factory reset by holding the reset button for 10 seconds", "hold the reset pin for 10 seconds to factory reset", "do a factory reset with the reset button (10 seconds)"),
                    S("set up the Wi-Fi again after the reset", "redo the Wi-Fi setup afterwards", "configure the network again after the reset"),
                ),
            ),
        ),
    ),
    Archetype(
        "port_forwarding",
        "port forwarding does not work",
        kinds=("router", "5g", "cable"),
        says=(
            "port forwarding on {subj} [doesn't work|isn't working|does nothing]",
            "I forwarded port {port} on {subj} but it's still closed from outside",
            "[my|the] [game server|camera|NAS] isn't reachable from outside even with the port forward set up on {subj}",
        ),
        ask=(
            "{p} port forwarding not working",
            "port {port} still closed on {p}",
            "can't reach home server through {p}",
        ),
        errors=(),
        code_rate=0.0,
        causes=(
            Cause(
                "carrier-grade NAT without a public IP",
                (
                    "Your connection is behind carrier-grade NAT, so there's no public IP to forward to",
                    "[It's|This is] CGNAT: the WAN address isn't a public one",
                ),
                (
                    A("assign a public IPv4 address", "assign you a public IPv4 address", "switch your line to a public IP"),
                    REBOOT,
                ),
                kinds=('5g', 'router', 'cable'),
            ),
            Cause(
                "double NAT behind the provider box",
                (
                    "You have two routers doing NAT, so the forward on one never sees the traffic",
                    "It's double NAT: the provider box in front also does NAT",
                ),
                (
                    S("put the provider box in bridge mode", "switch the provider modem to bridge mode", "enable bridge mode on the ISP box"),
                ),
                kinds=('router',),
            ),
        ),
    ),
    Archetype(
        "dns_failures",
        "some websites do not load",
        kinds=("router", "5g", "cable", "mesh"),
        says=(
            "some websites [don't load|time out] but others work fine on {subj}",
            "[browsing|pages] [fail|fails] with a DNS error while streaming still works",
            "sites [randomly|keep] fail to load, [apps|games] work though",
        ),
        ask=(
            "some websites not loading on {p}",
            "DNS errors with {p}",
            "{p} pages fail to load, apps work",
        ),
        errors=("DNS_PROBE_FINISHED_NXDOMAIN", "Server not found ({code})"),
        code_rate=0.3,
        causes=(
            Cause(
                "faulty provider DNS server",
                (
                    "One of our DNS servers in your region is failing",
                    "[It's|This is] a DNS problem on our side",
                ),
                (
                    S("set the DNS servers to {dns}", "change the DNS server to {dns} in the router", "use {dns} as DNS"),
                    REBOOT,
                ),
                params=(("dns", ("1.1.1.1", "9.9.9.9", "8.8.8.8")),),
            ),
            Cause(
                "stale DNS cache on the router",
                (
                    "The router's DNS cache is holding stale entries",
                    "Old DNS entries are cached on the router",
                ),
                (
                    S("flush the router's DNS cache", "clear the DNS cache in the admin page", "flush DNS on the router"),
                    REBOOT,
                ),
            ),
        ),
    ),
    Archetype(
        "mesh_node_offline",
        "mesh satellite keeps going offline",
        kinds=("mesh",),
        says=(
            "one of the [satellites|nodes] of {subj} keeps going offline",
            "the [upstairs|garage|bedroom] node of {subj} [drops out|shows offline] [a few times a day|every day]",
            "{subj} [satellite|node] [loses|won't keep] its connection to the main unit",
        ),
        ask=(
            "{p} satellite goes offline",
            "{p} node keeps disconnecting",
            "mesh node drops on {p}",
        ),
        errors=("Node offline ({code})",),
        code_rate=0.6,
        causes=(
            Cause(
                "satellite placed too far from the main unit",
                (
                    "The node is too far from the main unit and the backhaul is too weak",
                    "[Its|The] backhaul signal is too weak at that distance",
                ),
                (
                    S("move the satellite closer to the main unit", "put the node halfway between the main unit and the dead spot", "relocate the satellite nearer the base"),
                ),
            ),
            Cause(
                "backhaul channel set to auto",
                (
                    "The backhaul channel on auto keeps hopping onto DFS channels and the node drops",
                    "The dedicated backhaul channel hops to radar channels and disconnects",
                ),
                (
                    S("fix the backhaul channel to {channel}", "set the backhaul channel to {channel} manually", "pin the backhaul to channel {channel}"),
                    FIRMWARE,
                ),
                params=(("channel", ("36", "44", "149")),),
            ),
        ),
    ),
    Archetype(
        "no_dial_tone",
        "home phone has no dial tone",
        kinds=("voip",),
        says=(
            "my home phone has no dial tone[ since the weekend|]",
            "the landline plugged into {subj} is dead",
            "no dial tone on the phone connected to {subj}, internet works",
        ),
        ask=(
            "no dial tone with {p}",
            "landline dead on {p}",
            "{p} phone line not working",
        ),
        errors=("SIP registration failed ({code})",),
        code_rate=0.8,
        causes=(
            Cause(
                "SIP registration expired after a password change",
                (
                    "The adapter's SIP registration failed after the voice password was changed",
                    "It can't register with the voice server anymore",
                ),
                (
                    S("re-enter the SIP credentials in the adapter", "enter the new SIP password on the adapter", "update the voice account credentials on the {model}"),
                    REBOOT,
                ),
            ),
            Cause(
                "phone plugged into the wrong port",
                (
                    "The phone is on Line 2, which isn't provisioned",
                    "Only Line 1 has a number, and the phone is on the other port",
                ),
                (
                    S("plug the phone into the Line 1 port", "move the phone cable to the Line 1 port", "use the Phone 1 socket"),
                ),
            ),
        ),
    ),
    Archetype(
        "reboot_loop",
        "device reboots by itself repeatedly",
        says=(
            "{subj} keeps rebooting itself[ every few minutes|]",
            "{subj} [restarts|reboots] [randomly|on its own] [several times a day|all day]",
            "the lights on {subj} go off and it [boots again|restarts] [over and over|constantly]",
        ),
        ask=(
            "{p} keeps rebooting",
            "{p} restarts by itself",
            "random reboots on {p}",
        ),
        errors=("System restart: watchdog {code}", "Kernel panic ({code})"),
        code_rate=0.5,
        causes=(
            Cause(
                "failing power adapter",
                (
                    "The power adapter can't deliver enough current under load and the unit resets",
                    "[It's|This is] the power supply: it sags and the unit restarts",
                ),
                (
                    A("send a replacement power adapter", "send you a replacement power adapter", "ship you a new power supply"),
                ),
            ),
            Cause(
                "memory leak in the firmware",
                (
                    "The firmware you have leaks memory and the watchdog reboots the unit",
                    "[It's|This is] a known memory leak in this firmware",
                ),
                (
                    FIRMWARE,
                ),
            ),
        ),
    ),
)

DOMAIN = Domain(
    name="telecom",
    weight=0.26,
    products=PRODUCTS,
    archetypes=ARCHETYPES,
    failed_fixes=(
        ("power-cycle the modem", "power-cycled everything"),
        ("unplug and replug all the cables", "unplugged and replugged all the cables"),
        ("test with a different device", "tried another laptop"),
        ("forget the network and reconnect", "forgot the network and reconnected"),
        ("move closer to the router", "moved right next to the router"),
        ("reset the network settings on the phone", "reset the network settings on my phone"),
        ("run the line test in the app", "ran the line test in your app"),
    ),
    brands=("Brightwave Internet", "Northlink Telecom", "Meridian Broadband"),
    channel_weights=(0.3, 0.45, 0.25),
    version_word="firmware",
    option_word="plan",
    subjects=("my {product}", "the {model}", "my {product} ({model})", "{product}", "the {product}"),
    query_refs=("{product}", "my {product}", "the {model}", "{product} {model}"),
)
