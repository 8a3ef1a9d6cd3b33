"""Accounts and subscriptions of online services: sign-in, 2FA, billing, apps on TVs and phones."""

from __future__ import annotations

from .model import Archetype, Cause, Domain, Product, Step


def S(canonical: str, *phrasings: str) -> Step:
    return Step(canonical, tuple(phrasings) or (canonical,))


def A(canonical: str, *phrasings: str) -> Step:
    """A step support carries out."""
    return Step(canonical, tuple(phrasings) or (canonical,), actor="agent")


UPDATE = S(
    "update the {product} app to {fix_version}",
    "update the {product} app to {fix_version}",
    "install app version {fix_version} from the store",
    "get the {fix_version} app update",
)
RESET_PW = S(
    "reset the password from the sign-in page",
    "reset your password using Forgot password",
    "do a password reset from the login page",
)

PRODUCTS = (
    Product("pulse", "Pulse+ Streaming", "streaming", "Pulse+", "PLS", "the streaming app", None, ("8.4", "9.0"), ("Basic monthly", "Premium annual", "Family plan")),
    Product("cloudnest", "Cloudnest Storage", "storage", "Cloudnest", "CN", "my storage account", None, ("4.2", "4.5"), ("Free 5 GB", "Plus 200 GB", "Pro 2 TB")),
    Product("tasklane", "Tasklane", "saas", "Tasklane", "TL", "the workspace", None, ("3.9", "4.0"), ("Starter", "Team", "Business")),
    Product("fitloop", "Fitloop", "fitness", "Fitloop", "FL", "the fitness app", None, ("2.6", "2.8"), ("Free tier", "Premium monthly")),
    Product("vaultbox", "Vaultbox Passwords", "saas", "Vaultbox", "VBX", "the password manager", None, ("5.1", "5.3"), ("Personal", "Families", "Teams")),
    Product("photon", "Photon Photos", "storage", "Photon", "PH", "the photo cloud", None, ("3.3", "3.4"), ("Free 15 GB", "Photon One 100 GB")),
    Product("lingo", "Lingo Lessons", "fitness", "Lingo", "LL", "the language app", None, ("7.0", "7.2"), ("Free tier", "Super annual")),
    Product("melody", "Melodia Music", "streaming", "Melodia", "MD", "the music app", None, ("6.1", "6.3"), ("Individual", "Duo", "Student")),
)

ARCHETYPES = (
    Archetype(
        "twofa_lockout",
        "locked out after losing the two-factor device",
        uses_version=False,
        extras=("account_email",),
        says=(
            "I [lost|broke|replaced] my phone and now I can't get past the two-factor step on {subj}",
            "{subj} asks for a 2FA code but the authenticator was on my old phone",
            "I'm locked out of {subj} because I don't have my [authenticator|2FA codes] anymore",
        ),
        ask=(
            "locked out of {p} after losing phone with 2FA",
            "{p} two-factor code on old phone",
            "{p} can't pass 2FA, new phone",
        ),
        causes=(
            Cause(
                "authenticator tied to the old phone with no backup codes",
                (
                    "The authenticator was only on the old phone and no backup codes were saved",
                    "2FA is bound to the old device",
                ),
                (
                    S("verify identity with the account recovery form", "fill in the account recovery form so we can verify you", "go through identity verification via the recovery form"),
                    S("set up two-factor again on the new phone", "re-enrol 2FA on the new phone", "add the authenticator again on the new device"),
                ),
            ),
        ),
    ),
    Archetype(
        "reset_email_missing",
        "password reset email never arrives",
        uses_version=False,
        extras=("account_email",),
        says=(
            "the password reset email for {subj} never [arrives|comes]",
            "I [requested|asked for] a reset link for {subj} [three times|several times] and got nothing",
            "{subj} says it sent a reset email but my inbox is empty",
        ),
        ask=(
            "{p} password reset email not arriving",
            "no reset link from {p}",
            "{p} forgot password email missing",
        ),
        causes=(
            Cause(
                "email address on the account has a typo",
                (
                    "The email on the account has a typo, so the reset goes nowhere",
                    "The address on file is misspelled",
                ),
                (
                    A("correct the email address on the account after identity check", "fix the email on the account once you confirm a few details", "update the misspelled email on file"),
                    RESET_PW,
                ),
            ),
            Cause(
                "reset emails blocked by the mail provider",
                (
                    "Your mail provider is rejecting our reset emails",
                    "Our emails are being blocked by your email provider's filter",
                ),
                (
                    S("add the sender to the safe senders list", "whitelist our sender address", "mark our address as a safe sender"),
                    RESET_PW,
                ),
            ),
        ),
    ),
    Archetype(
        "charged_after_cancel",
        "charged after cancelling the subscription",
        uses_version=False,
        extras=("account_email", "amount"),
        says=(
            "I cancelled {subj} [last month|weeks ago] but I was charged again",
            "{subj} [billed|charged] me {amount} even though I cancelled",
            "still getting [charges|billed] for {subj} after cancelling",
        ),
        ask=(
            "{p} charged after cancelling",
            "billed by {p} after cancellation",
            "{p} subscription charged though cancelled",
        ),
        causes=(
            Cause(
                "cancellation done through the app store, not the account",
                (
                    "The subscription was billed through the app store, so cancelling on the website didn't stop it",
                    "Billing runs through the app store subscription",
                ),
                (
                    S("cancel the subscription in the app store settings", "cancel it under Subscriptions in your app store account", "turn off the subscription in the app store"),
                    A("refund the last charge", "refund the last charge", "issue a refund for the latest charge"),
                ),
            ),
            Cause(
                "cancellation not confirmed on the last step",
                (
                    "The cancellation was never confirmed on the last screen",
                    "The cancel flow wasn't completed",
                ),
                (
                    A("cancel the subscription from account settings", "cancel it for you from account settings", "finish the cancellation in Account > Subscription"),
                    A("refund the last charge", "refund the last charge", "issue a refund for the latest charge"),
                ),
            ),
        ),
    ),
    Archetype(
        "account_locked",
        "account locked after failed sign-ins",
        uses_version=False,
        extras=("account_email",),
        says=(
            "{subj} says my account is locked",
            "I got locked out of {subj} after [a few|too many] wrong passwords",
            "can't sign in to {subj}, it says the account is temporarily locked",
        ),
        ask=(
            "{p} account locked",
            "{p} locked after wrong password",
            "unlock {p} account",
        ),
        errors=("Account locked ({code})", "Too many attempts. Error {code}"),
        code_rate=0.8,
        causes=(
            Cause(
                "too many failed attempts from a saved old password",
                (
                    "A device with the old saved password kept trying and triggered the lock",
                    "One of your devices kept retrying with the old password",
                ),
                (
                    A("unlock the account", "unlock the account", "lift the lock on the account"),
                    S("update the saved password on all devices", "update the saved password on your other devices", "sign out old devices with the old password"),
                ),
            ),
            Cause(
                "suspicious sign-in from another country",
                (
                    "Security locked it after a suspicious sign-in from abroad",
                    "There was a login attempt from another country, so it was locked",
                ),
                (
                    RESET_PW,
                    S("turn on two-factor authentication", "enable 2FA on the account", "switch on two-step verification"),
                ),
            ),
        ),
    ),
    Archetype(
        "tv_app_login",
        "TV app fails to sign in",
        kinds=("streaming", "fitness"),
        says=(
            "the {product} app on my [smart TV|TV stick|TV] won't sign in",
            "{subj} on the TV [shows an error|gets stuck] when I enter the activation code",
            "I can't log in to {subj} on my TV, phone works fine",
        ),
        ask=(
            "{p} TV app won't sign in",
            "{p} activation code fails on TV",
            "can't log into {p} on smart TV",
        ),
        errors=("Sign-in failed ({code})", "Something went wrong. Code {code}"),
        code_rate=0.9,
        causes=(
            Cause(
                "outdated TV app with an expired certificate",
                (
                    "The TV app version has an expired certificate, so sign-in fails",
                    "That TV app build can't talk to the new sign-in service",
                ),
                (
                    UPDATE,
                    S("sign in with the activation code again", "enter the activation code again", "redo the code sign-in"),
                ),
            ),
            Cause(
                "device limit reached on the plan",
                (
                    "Your plan's device limit is reached",
                    "All device slots on the plan are used",
                ),
                (
                    S("remove an old device under Account > Devices", "sign out an old device in Account > Devices", "free a device slot from the account page"),
                    S("sign in with the activation code again", "enter the activation code again", "redo the code sign-in"),
                ),
            ),
        ),
    ),
    Archetype(
        "family_invite_fails",
        "family member invite fails",
        kinds=("streaming", "storage"),
        says=(
            "I can't add my [partner|daughter|son] to {subj}, the invite fails",
            "the family invite for {subj} [says invalid|expires right away]",
            "my [wife|husband|kid] never gets the invitation to {subj}",
        ),
        ask=(
            "{p} family invite not working",
            "can't add family member to {p}",
            "{p} invitation invalid",
        ),
        errors=("Invite could not be sent ({code})",),
        code_rate=0.5,
        causes=(
            Cause(
                "invitee in a different country",
                (
                    "Family members must be in the same country as the plan owner",
                    "The invitee's account is registered in another country",
                ),
                (
                    S("change the invitee's account country", "have them update their account country", "update the country on their account"),
                    S("send the invite again", "resend the invite", "invite them again"),
                ),
            ),
            Cause(
                "invitee already in another family group",
                (
                    "The person is already in another family group",
                    "They still belong to a different family plan",
                ),
                (
                    S("leave the other family group first", "have them leave their current family group", "remove them from the other family plan"),
                    S("send the invite again", "resend the invite", "invite them again"),
                ),
            ),
        ),
    ),
    Archetype(
        "storage_full",
        "storage shows full after downgrade",
        kinds=("storage",),
        says=(
            "{subj} says my storage is full since I [downgraded|changed plans]",
            "after switching plans {subj} won't upload anything, [it says I'm over quota|quota exceeded]",
            "{subj} shows [way more|more] storage used than I have files",
        ),
        ask=(
            "{p} storage full after downgrade",
            "{p} over quota after plan change",
            "{p} storage usage wrong",
        ),
        errors=("Quota exceeded ({code})",),
        code_rate=0.6,
        causes=(
            Cause(
                "deleted files still in the trash counting against quota",
                (
                    "Files in the trash still count against the quota",
                    "Your trash holds a lot of deleted files that still count",
                ),
                (
                    S("empty the trash", "empty the trash folder", "permanently delete the files in the trash"),
                ),
            ),
            Cause(
                "old file versions kept by version history",
                (
                    "Version history keeps old copies of large files",
                    "Older versions of your files are taking up space",
                ),
                (
                    S("purge old file versions in the storage settings", "clear version history under Settings > Storage", "delete old versions of large files"),
                ),
            ),
        ),
    ),
    Archetype(
        "data_missing",
        "data missing after app sync",
        kinds=("fitness", "saas", "streaming"),
        says=(
            "my [history|data|playlists|workouts] disappeared from {subj} after the [sync|update]",
            "{subj} lost [weeks|months] of my [data|activity]",
            "everything I saved in {subj} is gone [on the new phone|since yesterday]",
        ),
        ask=(
            "{p} data disappeared after sync",
            "lost my history in {p}",
            "{p} data missing on new phone",
        ),
        errors=("Sync error {code}",),
        code_rate=0.5,
        causes=(
            Cause(
                "signed in with a second account",
                (
                    "The new device is signed in to a second account created with a different sign-in method",
                    "There are two accounts, one from Apple sign-in and one from email",
                ),
                (
                    S("sign out and sign in with the original account", "sign out and use the original login", "log in with the account you used before"),
                ),
            ),
            Cause(
                "sync bug in the app release",
                (
                    "A bug in that app release stops history from syncing down",
                    "It's a known sync bug in this release",
                ),
                (
                    UPDATE,
                    S("pull to refresh on the history screen", "pull down to refresh the history", "force a refresh of the history"),
                ),
            ),
        ),
    ),
    Archetype(
        "playback_error",
        "playback stops with an error",
        kinds=("streaming",),
        says=(
            "[videos|songs|tracks] in {subj} [stop|won't play] with an error",
            "{subj} [won't play anything|stops playing after a few seconds]",
            "playback in {subj} [fails|keeps failing] on [every|most] titles",
        ),
        ask=(
            "{p} playback error",
            "{p} won't play, shows error",
            "{p} stops playing after seconds",
        ),
        errors=("Playback error {code}", "Can't play this title right now ({code})"),
        code_rate=0.95,
        causes=(
            Cause(
                "corrupted offline downloads cache",
                (
                    "The offline downloads cache is corrupted",
                    "The app's cache of downloads is damaged",
                ),
                (
                    S("clear the app's cache and downloads", "clear cache and downloads in the app settings", "delete the downloads and clear the cache"),
                ),
            ),
            Cause(
                "playback blocked by the VPN",
                (
                    "Playback is blocked when a VPN is on because of licensing",
                    "The VPN makes it look like you're in another region",
                ),
                (
                    S("turn off the VPN while streaming", "disable your VPN while watching", "switch off the VPN"),
                ),
            ),
        ),
    ),
)

DOMAIN = Domain(
    name="accounts",
    weight=0.16,
    products=PRODUCTS,
    archetypes=ARCHETYPES,
    failed_fixes=(
        ("clear the app data", "cleared the app data"),
        ("reinstall the app", "reinstalled the app"),
        ("use another browser", "tried another browser"),
        ("restart the phone", "restarted my phone"),
        ("log in on the website instead", "tried the website"),
    ),
    brands=(),
    channel_weights=(0.2, 0.45, 0.35),
    version_word="app version",
    option_word="plan",
    subjects=("{product}", "my {product} account", "{product}", "my {product}"),
    query_refs=("{product}", "my {product}", "{product}"),
)
