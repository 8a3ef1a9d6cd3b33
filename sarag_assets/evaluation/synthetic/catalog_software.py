"""Software / OS troubleshooting: desktop applications on Windows, macOS and Linux."""

from __future__ import annotations

from .model import Archetype, Cause, Domain, Product, Step

WIN = ("Windows 10 22H2", "Windows 11 23H2", "Windows 11 24H2")
MAC = ("macOS Ventura 13.6", "macOS Sonoma 14.5", "macOS Sequoia 15.1")
LINUX = ("Ubuntu 22.04", "Ubuntu 24.04", "Fedora 40")


def S(canonical: str, *phrasings: str) -> Step:
    return Step(canonical, tuple(phrasings) or (canonical,))


RESTART = S(
    "restart {product}",
    "restart {product}",
    "close {product} completely and open it again",
    "quit {product} [from the tray icon|fully] and relaunch it",
)
UPDATE = S(
    "update {product} to {fix_version}",
    "update {product} to {fix_version}",
    "install the {fix_version} update[ from the download page|]",
    "upgrade to version {fix_version}[, which has the fix|]",
)
REINSTALL_CLEAN = S(
    "uninstall {product} and remove its leftover program data folder before reinstalling",
    "uninstall {product}, delete the leftover folder in program data, then reinstall",
    "do a clean reinstall: remove {product}, wipe its program data folder and install it again",
)
REBOOT = S(
    "reboot the computer",
    "reboot the computer",
    "restart the machine[ once more|]",
    "do a full restart of the computer[, not just sleep|]",
)

PRODUCTS = (
    Product("nimbus", "Nimbus Sync", "sync", "Nimbus", "NS", "the sync app", None, ("2.9", "3.1", "3.2"), WIN + MAC),
    Product("cloudberry", "Cloudberry Drive", "sync", "Cloudberry", "CBD", "the drive client", None, ("5.4", "6.0"), WIN + MAC + LINUX),
    Product("orbit", "Orbit Mail", "mail", "Orbit", "OM", "my mail client", None, ("5.8", "6.1"), WIN + MAC),
    Product("postwise", "Postwise", "mail", "Postwise", "PW", "the email app", None, ("12.0", "12.3"), WIN + MAC + LINUX),
    Product("quill", "Quill Writer", "office", "Quill", "QW", "the editor", None, ("11.4", "12.0"), WIN + MAC),
    Product("helix", "Helix VPN", "vpn", "Helix", "HX", "the VPN client", None, ("4.6", "4.7", "5.0"), WIN + MAC + LINUX),
    Product("warden", "Warden VPN", "vpn", "Warden", "WV", "the VPN", None, ("2.2", "3.0"), WIN + MAC),
    Product("pixelia", "Pixelia Studio", "photo", "Pixelia", "PX", "the photo editor", None, ("2023.4", "2024.1"), WIN + MAC),
    Product("stratus", "Stratus Meet", "meet", "Stratus", "SM", "the meeting app", None, ("7.2", "7.5"), WIN + MAC + LINUX),
    Product("vantage", "Vantage Backup", "backup", "Vantage", "VB", "the backup tool", None, ("9.1", "10.0"), WIN + MAC),
    Product("ledgerly", "Ledgerly Desktop", "accounting", "Ledgerly", "LG", "the accounting program", None, ("21.3", "22.1"), WIN),
)

ARCHETYPES = (
    Archetype(
        "crash_on_launch",
        "application crashes on launch",
        says=(
            "{subj} [keeps crashing|crashes|closes itself] [right after I open it|as soon as it starts|on startup|a second after launching]",
            "{subj} won't [start|open|launch] anymore[, the window flashes and disappears|, it just closes|]",
            "every time I [launch|start|open] {subj} it [crashes|shuts down|vanishes] [within a few seconds|immediately|before the main window shows up]",
        ),
        ask=(
            "{p} crashes on startup",
            "{p} closes immediately after launching",
            "startup crash in {p}",
            "{p} won't stay open after I launch it",
        ),
        errors=(
            "{product} has stopped working ({code})",
            "Unexpected error {code}: the application must close",
            "Fatal error {code} during startup",
        ),
        code_rate=0.85,
        causes=(
            Cause(
                "corrupted user settings file",
                (
                    "[This|That] [usually happens|happens] when the settings file in your profile [gets corrupted|is damaged], [often after an unclean shutdown|typically after a crash]",
                    "The startup crash comes from a corrupted [settings|preferences] file that {product} reads when it launches",
                ),
                (
                    S("rename the settings file so it is rebuilt",
                      "rename settings.json in the {product} profile folder so a fresh one gets created",
                      "move the preferences file out of the profile folder so {product} rebuilds it"),
                    RESTART,
                ),
            ),
            Cause(
                "incompatible graphics driver",
                (
                    "[This is|It's] a known clash between {product} and [older|outdated] graphics drivers",
                    "The crash happens in the rendering code: {product} doesn't get along with the graphics driver you have",
                ),
                (
                    S("update the graphics driver", "update your graphics driver from the GPU vendor's site", "install the latest display driver"),
                    S("turn off hardware acceleration in {product}", "switch off hardware acceleration under Settings > Advanced", "disable GPU acceleration in the {product} settings"),
                ),
            ),
            Cause(
                "conflict with a third-party antivirus",
                (
                    "Your antivirus is [blocking|quarantining] one of the {product} libraries at launch, which makes it [crash|close]",
                    "[We've seen|There's] a conflict between {product} and some antivirus suites that [kill|block] it on startup",
                ),
                (
                    S("add the {product} install folder to the antivirus exclusions", "add the {product} program folder as an exclusion in your antivirus", "whitelist the {product} install directory in the antivirus settings"),
                    RESTART,
                ),
            ),
        ),
    ),
    Archetype(
        "update_fails",
        "update fails to install",
        says=(
            "the [latest|new] update for {subj} [fails|won't install|keeps failing] [halfway|at around 80%|every time]",
            "I can't update {subj}, the installer [stops with an error|rolls back|just quits]",
            "{subj} [says an update is available but|tries to update and] [it never finishes|the update fails]",
        ),
        ask=(
            "{p} update won't install",
            "installing the {p} update fails",
            "{p} updater keeps rolling back",
        ),
        errors=(
            "Update failed with error {code}",
            "Installer error {code}: could not replace files",
            "Setup was unable to complete ({code})",
        ),
        code_rate=0.9,
        causes=(
            Cause(
                "installer lacks administrator rights",
                (
                    "The updater needs [admin|administrator] rights to replace files in the program folder and [yours doesn't have them|it wasn't given them]",
                    "[It fails|This fails] because the installer isn't running elevated, so it can't overwrite the old files",
                ),
                (
                    S("run the installer as administrator", "right-click the installer and choose Run as administrator", "start the setup with admin rights"),
                    S("close {product} before updating", "make sure {product} is fully closed before you run the update", "quit {product} first so no files are locked"),
                ),
                kinds=('*',),
            ),
            Cause(
                "leftover files from a previous version",
                (
                    "Files from an older install are left behind and the new installer [chokes on them|can't replace them]",
                    "[This happens|It happens] when a previous version left stale files in the program data folder",
                ),
                (
                    REINSTALL_CLEAN,
                ),
            ),
            Cause(
                "not enough free disk space for the update",
                (
                    "The update unpacks to the system drive first and there isn't enough free space[ for it|]",
                    "[It's|This is] a disk space problem: the installer needs about {space} free on the system drive",
                ),
                (
                    S("free up at least {space} on the system drive", "free up {space} or more on the system drive", "clear at least {space} of space on the C: drive"),
                    S("run the update again", "run the updater again", "retry the update"),
                ),
                params=(("space", ("2 GB", "4 GB", "5 GB")),),
            ),
        ),
    ),
    Archetype(
        "login_loop",
        "keeps asking to sign in again",
        kinds=("sync", "mail", "meet", "accounting", "vpn", "backup"),
        says=(
            "{subj} keeps asking me to [sign in|log in] [over and over|every few minutes|again and again]",
            "I [sign in|log in] to {subj} and a [minute|moment] later it [logs me out|asks for my password again]",
            "{subj} is stuck in a [login|sign-in] loop",
        ),
        ask=(
            "{p} keeps logging me out",
            "{p} asks for the password again and again",
            "sign-in loop in {p}",
        ),
        errors=(
            "Authentication failed ({code}): session expired",
            "Your session has expired. Please sign in again. [{code}]",
        ),
        code_rate=0.6,
        causes=(
            Cause(
                "stale cached credentials in the system keychain",
                (
                    "An old [token|login] is cached in the [keychain|credential store] and {product} keeps picking it up",
                    "[This is caused by|It comes from] stale saved credentials that override the new sign-in",
                ),
                (
                    S("remove the saved {product} entries from the credential manager", "delete the {product} entries in Credential Manager / Keychain Access", "clear the stored {product} credentials from the keychain"),
                    S("sign in to {product} again", "sign in again", "log back in to {product}"),
                ),
            ),
            Cause(
                "system clock out of sync",
                (
                    "Your computer's clock is off by a few minutes, so the login token looks expired as soon as it's issued",
                    "The sign-in token is rejected because the system time [isn't synced|is drifting]",
                ),
                (
                    S("turn on automatic time synchronisation", "enable Set time automatically in the date and time settings", "sync the system clock with an internet time server"),
                    S("sign in to {product} again", "sign in again", "log back in to {product}"),
                ),
            ),
        ),
    ),
    Archetype(
        "license_activation",
        "license key is not accepted",
        kinds=("office", "photo", "accounting", "backup", "vpn"),
        says=(
            "{subj} won't accept my license key",
            "I [can't|cannot] activate {subj}[, it says the key is invalid|]",
            "{subj} [says|claims] my license is [invalid|already in use] even though I [bought|paid for] it",
        ),
        ask=(
            "{p} license key not accepted",
            "can't activate {p}",
            "{p} says license already in use",
        ),
        errors=(
            "Activation failed ({code}): the license key is not valid",
            "License error {code}: maximum number of activations reached",
        ),
        code_rate=0.95,
        causes=(
            Cause(
                "license still bound to the old computer",
                (
                    "The key is still activated on your [old|previous] computer and the license only allows one device",
                    "Your license counts the old machine as active, so it has no free activation left",
                ),
                (
                    S("deactivate the license on the old computer", "deactivate {product} on the old machine", "release the activation from the old computer under Account > Devices"),
                    S("enter the license key again", "enter the key again", "activate with the same key again"),
                ),
            ),
            Cause(
                "key typed with the letter O instead of zero",
                (
                    "The key contains zeros and it's easy to type the letter O instead",
                    "Keys from the web store use the digit 0 only, and the one entered had a letter O",
                ),
                (
                    S("copy and paste the key from the purchase e-mail", "paste the key straight from the purchase email instead of typing it", "copy the key from your order confirmation"),
                ),
            ),
        ),
    ),
    Archetype(
        "high_cpu",
        "very slow with high CPU usage",
        says=(
            "{subj} is [extremely|super|painfully] slow and the fan is going crazy",
            "{subj} [eats|uses] [like 90%|almost all] of the CPU [even when idle|all the time]",
            "since [last week|the weekend|a few days] {subj} [lags|stutters|freezes for seconds at a time]",
        ),
        ask=(
            "{p} very slow with high CPU",
            "{p} using all the CPU",
            "{p} lagging and fan noise",
        ),
        code_rate=0.0,
        causes=(
            Cause(
                "background indexing stuck in a loop",
                (
                    "The background indexer gets stuck re-indexing the same files, which keeps the CPU busy",
                    "[That's|This is] the indexing service looping over your data",
                ),
                (
                    S("rebuild the search index from the settings", "rebuild the index under Settings > Search", "reset the search index"),
                    RESTART,
                ),
            ),
            Cause(
                "hardware acceleration bug",
                (
                    "There's a rendering bug when hardware acceleration is on, and it falls back to burning CPU",
                    "The [lag|slowness] is a known hardware acceleration bug in this build",
                ),
                (
                    S("turn off hardware acceleration in {product}", "switch off hardware acceleration under Settings > Advanced", "disable GPU acceleration in the {product} settings"),
                    UPDATE,
                ),
            ),
        ),
    ),
    Archetype(
        "sync_stuck",
        "sync stuck and never completes",
        kinds=("sync", "backup"),
        says=(
            "{subj} [is stuck|hangs] at [99%|\"Syncing...\"|the same file] and never finishes",
            "{subj} [stopped syncing|doesn't sync anymore], [files I change|new files] [never show up|don't appear] on my other computer",
            "{subj} [keeps saying|shows] it's processing changes [forever|for hours] but nothing [uploads|moves]",
        ),
        ask=(
            "{p} sync stuck and never finishes",
            "{p} not syncing files anymore",
            "{p} hangs while syncing",
        ),
        errors=(
            "Sync paused: {code}",
            "Could not sync changes ({code})",
            "Sync error {code}: local index unavailable",
        ),
        code_rate=0.8,
        causes=(
            Cause(
                "corrupted local sync index",
                (
                    "The local index database that tracks your files [got corrupted|is damaged], so the client can't work out what changed",
                    "This is a corrupted sync index on your machine",
                ),
                (
                    S("pause syncing", "pause syncing from the tray icon", "pause sync first"),
                    S("delete the local index file", "delete index.db in the {product} data folder", "remove the local index database file"),
                    S("resume syncing so the index is rebuilt", "resume sync and let it rebuild the index", "start syncing again; it rebuilds the index"),
                ),
            ),
            Cause(
                "file path longer than 260 characters",
                (
                    "One of your files has a path longer than 260 characters and the client stalls on it",
                    "[It's|This is] the path length limit: a deeply nested file is blocking the queue",
                ),
                (
                    S("shorten or move the file with the over-long path", "move the deeply nested file to a shorter path", "rename the folders so the path is under 260 characters"),
                    S("enable long path support", "turn on long path support in the system settings", "enable the LongPathsEnabled option"),
                ),
            ),
            Cause(
                "a file locked by another program",
                (
                    "Another program keeps one of the files open, so it can't be uploaded and the queue stops there",
                    "The stuck item is a file that's locked by another application",
                ),
                (
                    S("close the program holding the locked file", "close whatever program has that file open", "quit the app that's locking the file"),
                    S("resume syncing", "resume sync", "hit Resume in the sync menu"),
                ),
            ),
        ),
    ),
    Archetype(
        "send_fails",
        "emails stuck in the outbox",
        kinds=("mail",),
        says=(
            "my emails [sit|are stuck] in the outbox and never [go out|get sent] in {subj}",
            "{subj} can receive mail but sending [fails|doesn't work]",
            "I can't send anything from {subj}, [it just sits in Outbox|it keeps retrying]",
        ),
        ask=(
            "{p} emails stuck in outbox",
            "{p} can receive but can't send",
            "sending mail fails in {p}",
        ),
        errors=(
            "Sending failed: the SMTP server rejected the connection ({code})",
            "Error {code}: could not send message",
        ),
        code_rate=0.85,
        causes=(
            Cause(
                "wrong SMTP port after the provider change",
                (
                    "Your outgoing server settings still use port 25, which your provider [blocks|stopped accepting]",
                    "The SMTP port is wrong: outgoing mail needs port 587 with STARTTLS now",
                ),
                (
                    S("set the outgoing server port to 587 with STARTTLS", "change the SMTP port to 587 and pick STARTTLS", "switch outgoing mail to port 587 (STARTTLS)"),
                    S("resend the messages in the outbox", "send the stuck messages again", "retry sending from the outbox"),
                ),
            ),
            Cause(
                "app password required for the mail account",
                (
                    "Your mail provider now requires an app password for third-party clients, so the normal one is rejected",
                    "Sending fails because the account needs an app-specific password",
                ),
                (
                    S("create an app password in the mail provider's security settings", "generate an app password in your provider's security page", "make an app-specific password for {product}"),
                    S("enter the app password in the outgoing server settings", "put that app password in the SMTP settings", "use the app password for outgoing mail"),
                ),
            ),
        ),
    ),
    Archetype(
        "vpn_drops",
        "VPN disconnects every few minutes",
        kinds=("vpn",),
        says=(
            "{subj} [disconnects|drops] every [few|5-10|couple of] minutes",
            "{subj} connects fine but the tunnel [keeps dropping|drops out] [randomly|all the time]",
            "I keep losing the connection on {subj}, then it reconnects, then drops again",
        ),
        ask=(
            "{p} keeps disconnecting every few minutes",
            "{p} tunnel drops randomly",
            "{p} connection unstable, reconnects constantly",
        ),
        errors=(
            "Connection lost ({code}). Reconnecting...",
            "Tunnel error {code}: peer not responding",
        ),
        code_rate=0.8,
        causes=(
            Cause(
                "MTU too large for the network",
                (
                    "The packet size (MTU) is too big for your network, so larger packets get dropped and the tunnel times out",
                    "[It's|This is] an MTU problem: fragmented packets kill the tunnel",
                ),
                (
                    S("set the MTU to {mtu} in the {product} settings", "lower the MTU to {mtu} under Settings > Connection", "change the tunnel MTU to {mtu}"),
                    S("reconnect the VPN", "reconnect", "disconnect and connect again"),
                ),
                params=(("mtu", ("1400", "1380", "1280")),),
            ),
            Cause(
                "Wi-Fi adapter power saving",
                (
                    "The Wi-Fi adapter goes into power saving and the tunnel drops each time",
                    "Power management on the network adapter is cutting the connection",
                ),
                (
                    S("disable power saving on the network adapter", "turn off Allow the computer to turn off this device in the adapter's power settings", "switch off Wi-Fi power saving"),
                    S("reset the network adapter", "reset the network adapter", "disable and re-enable the network adapter"),
                ),
            ),
            Cause(
                "protocol blocked by the network",
                (
                    "Your network throttles UDP, and the default protocol uses it",
                    "The default protocol is being blocked intermittently by the network you're on",
                ),
                (
                    S("switch the VPN protocol to TCP", "change the protocol to TCP in {product}", "use the TCP protocol instead of UDP"),
                ),
            ),
        ),
    ),
    Archetype(
        "export_blank",
        "exported PDF has blank pages",
        kinds=("office", "photo", "accounting"),
        says=(
            "when I export to PDF from {subj} [the pages come out blank|I get empty pages]",
            "{subj} [creates|produces] [blank|white] PDFs",
            "[printing|exporting] from {subj} gives me [empty pages|a blank document]",
        ),
        ask=(
            "{p} PDF export blank pages",
            "{p} exports empty PDF",
            "blank pages when exporting from {p}",
        ),
        errors=("Export completed with warnings ({code})",),
        code_rate=0.4,
        causes=(
            Cause(
                "missing embedded fonts",
                (
                    "The document uses fonts that aren't installed, and the exporter drops the text instead of substituting",
                    "[It's|This is] a font problem: the exporter can't embed the missing fonts",
                ),
                (
                    S("install the missing fonts", "install the fonts the document uses", "add the missing fonts to the system"),
                    S("turn on font embedding in the export options", "tick Embed fonts in the PDF export dialog", "enable embedded fonts when exporting"),
                ),
            ),
            Cause(
                "corrupted PDF printer driver",
                (
                    "The virtual PDF printer driver is corrupted",
                    "Export goes through the PDF printer driver, and yours is broken",
                ),
                (
                    S("remove and re-add the PDF printer", "delete the PDF printer and add it back", "reinstall the virtual PDF printer"),
                ),
            ),
        ),
    ),
    Archetype(
        "mic_not_detected",
        "microphone not detected in calls",
        kinds=("meet",),
        says=(
            "{subj} doesn't [see|detect|pick up] my microphone",
            "nobody can hear me in {subj}, the mic [shows no input|is greyed out]",
            "{subj} says no microphone found even though it works in other apps",
        ),
        ask=(
            "{p} microphone not detected",
            "{p} no mic input in calls",
            "others can't hear me on {p}",
        ),
        errors=("No audio input device found ({code})",),
        code_rate=0.5,
        causes=(
            Cause(
                "microphone access blocked in privacy settings",
                (
                    "The OS privacy settings block {product} from using the microphone",
                    "Microphone permission for desktop apps is switched off, so {product} gets no input",
                ),
                (
                    S("allow microphone access for {product} in the privacy settings", "turn on microphone access for {product} under Privacy > Microphone", "grant {product} microphone permission in the system settings"),
                    RESTART,
                ),
            ),
            Cause(
                "exclusive mode taken by another app",
                (
                    "Another app holds the microphone in exclusive mode",
                    "The mic is locked by a different program using exclusive mode",
                ),
                (
                    S("disable exclusive mode for the microphone", "untick Allow applications to take exclusive control in the mic properties", "turn off exclusive mode on the recording device"),
                    S("select the microphone again in the {product} audio settings", "pick the microphone again under Settings > Audio", "re-select the input device in {product}"),
                ),
            ),
        ),
    ),
    Archetype(
        "settings_lost",
        "settings reset after update",
        says=(
            "after [updating|the update] {subj} [lost|forgot] all my [settings|preferences|accounts]",
            "{subj} [reset|wiped] my [settings|configuration] [after the update|when it updated last night]",
            "[everything|all my settings] in {subj} [is|are] back to default since the [upgrade|update]",
        ),
        ask=(
            "{p} settings gone after update",
            "{p} reset to defaults after upgrading",
            "lost preferences in {p} after the update",
        ),
        errors=(),
        code_rate=0.0,
        causes=(
            Cause(
                "settings migration bug in the update",
                (
                    "The update has a migration bug: it writes the settings to a new folder and doesn't copy the old ones",
                    "[It's|This is] a known migration bug; your old settings are still on disk",
                ),
                (
                    S("restore the settings from the backup folder", "copy your old settings back from the settings.bak folder", "restore the backup of the profile folder"),
                    UPDATE,
                ),
            ),
            Cause(
                "profile saved on a roaming drive that was offline",
                (
                    "Your profile is on a network drive and it wasn't reachable at startup, so {product} created a fresh one",
                    "{product} couldn't reach the roaming profile and fell back to defaults",
                ),
                (
                    S("reconnect the network drive holding the profile", "reconnect the mapped drive with your profile", "make sure the network drive is connected"),
                    RESTART,
                ),
            ),
        ),
    ),
    Archetype(
        "connect_server",
        "cannot connect to the server",
        kinds=("mail", "meet", "accounting", "sync", "backup"),
        says=(
            "{subj} [can't|cannot|won't] connect to the server[ anymore|]",
            "{subj} says it's offline even though my internet works fine",
            "{subj} [times out|hangs] when [connecting|it tries to reach the server]",
        ),
        ask=(
            "{p} cannot connect to server",
            "{p} offline but internet works",
            "{p} connection timeout",
        ),
        errors=(
            "Could not connect to the server ({code})",
            "Connection timed out ({code})",
            "Secure connection failed: {code}",
        ),
        code_rate=0.9,
        causes=(
            Cause(
                "outdated root certificates",
                (
                    "The server moved to a new certificate and your system's root certificates are too old to trust it",
                    "The secure connection fails because the root certificate store is out of date",
                ),
                (
                    S("update the system root certificates", "install the pending root certificate update", "update the certificate store through system updates"),
                    RESTART,
                ),
            ),
            Cause(
                "proxy settings intercepting the connection",
                (
                    "A proxy configured on your machine intercepts the connection",
                    "Your system proxy settings route {product} through a proxy that blocks it",
                ),
                (
                    S("turn off the system proxy or add an exception for {product}", "disable the proxy in the network settings or add {product} to the bypass list", "set {product} to use no proxy"),
                ),
            ),
            Cause(
                "firewall rule blocking {product}",
                (
                    "The firewall has a rule blocking {product} from outbound connections",
                    "[It's|This is] the firewall: {product} is blocked from going out",
                ),
                (
                    S("allow {product} through the firewall", "add an allow rule for {product} in the firewall", "let {product} through the firewall for outgoing connections"),
                ),
            ),
        ),
    ),
    Archetype(
        "file_wont_open",
        "files fail to open",
        kinds=("office", "photo", "accounting"),
        says=(
            "{subj} [won't open|can't open|refuses to open] my [files|documents|projects] anymore",
            "opening [any|some] [file|document] in {subj} gives an error",
            "{subj} says my [file|project] is [corrupt|damaged] but it opened fine yesterday",
        ),
        ask=(
            "{p} can't open files",
            "{p} says file is corrupt",
            "error opening documents in {p}",
        ),
        errors=(
            "The file could not be opened ({code})",
            "Error {code}: file is damaged or in use",
        ),
        code_rate=0.9,
        causes=(
            Cause(
                "stale lock file from a crashed session",
                (
                    "A lock file from an earlier crash makes {product} think the file is still open somewhere",
                    "[There's|You have] a leftover lock file next to the document",
                ),
                (
                    S("delete the hidden lock file next to the document", "delete the ~lock file in the same folder", "remove the stale lock file"),
                    S("open the file again", "reopen the file", "try opening it again"),
                ),
            ),
            Cause(
                "file saved by a newer version",
                (
                    "The file was saved by a newer release and the older format reader can't parse it",
                    "[It's|This is] a version mismatch: the file was created in a newer version",
                ),
                (
                    UPDATE,
                ),
            ),
        ),
    ),
    Archetype(
        "notifications_missing",
        "notifications stopped showing",
        kinds=("mail", "meet", "sync"),
        says=(
            "I don't get [any|] notifications from {subj} anymore",
            "{subj} [stopped showing|doesn't show] [notifications|alerts|pop-ups]",
            "[notifications|alerts] for {subj} [never appear|are gone]",
        ),
        ask=(
            "{p} notifications not showing",
            "no alerts from {p}",
            "{p} stopped notifying me",
        ),
        errors=(),
        code_rate=0.0,
        causes=(
            Cause(
                "focus mode suppressing notifications",
                (
                    "Focus mode (Do Not Disturb) is on and silences {product}",
                    "The system's focus mode is suppressing them",
                ),
                (
                    S("turn off focus mode or allow {product} in it", "switch off Do Not Disturb or add {product} to the allowed apps", "allow {product} notifications during focus mode"),
                ),
            ),
            Cause(
                "notification permission reset by the OS update",
                (
                    "The last OS update reset the notification permission for {product}",
                    "Notifications were switched off for {product} when the system updated",
                ),
                (
                    S("enable notifications for {product} in the system settings", "turn notifications back on for {product} in Settings > Notifications", "re-enable {product} notifications in the system settings"),
                    RESTART,
                ),
            ),
        ),
    ),
)

DOMAIN = Domain(
    name="software",
    weight=0.34,
    products=PRODUCTS,
    archetypes=ARCHETYPES,
    failed_fixes=(
        ("restart the computer", "restarted the computer"),
        ("reinstall the app", "reinstalled it"),
        ("sign out and back in", "signed out and back in"),
        ("clear the app cache", "cleared the cache"),
        ("temporarily disable the antivirus", "disabled my antivirus for a bit"),
        ("install the pending system updates", "installed all the system updates"),
        ("run it in compatibility mode", "ran it in compatibility mode"),
        ("create a new user profile", "tried a fresh user profile"),
    ),
    brands=(),
    channel_weights=(0.45, 0.3, 0.25),
    version_word="version",
    option_word="OS",
    subjects=("{product}", "my {product}", "{product}", "the {product} app", "{product} [on my laptop|on this computer|]"),
    query_refs=("{product}", "{product}", "my {product}"),
)
