"""Shared wording: people, greetings, sign-offs, questions, answers, chatter. Templates use grammar.py syntax."""

from __future__ import annotations

FIRST_NAMES = (
    "Maria", "James", "Aisha", "Chen", "Lucas", "Priya", "Tom", "Fatima", "Diego", "Hannah", "Kofi", "Yuki",
    "Oliver", "Sofia", "Mateo", "Emma", "Noah", "Leila", "Ivan", "Grace", "Ravi", "Chloe", "Samuel", "Mei",
    "Omar", "Ana", "Ben", "Zara", "Daniel", "Ingrid", "Kwame", "Lena", "Marco", "Nadia", "Pablo", "Rosa",
    "Sven", "Tara", "Victor", "Wen", "Alex", "Jordan", "Sam", "Robin", "Kim", "Elif", "Hugo", "Amara",
)
LAST_NAMES = (
    "Garcia", "Smith", "Khan", "Wang", "Silva", "Patel", "Brown", "Haddad", "Lopez", "Muller", "Mensah", "Tanaka",
    "Johnson", "Rossi", "Fernandez", "Martin", "Nguyen", "Ahmadi", "Petrov", "Kelly", "Sharma", "Dubois", "Okafor",
    "Li", "Hassan", "Costa", "Wright", "Ali", "Novak", "Larsen", "Boateng", "Schmidt", "Bianchi", "Rahman",
    "Moreno", "Cruz", "Berg", "Reid", "Ivanova", "Zhou", "Taylor", "Park", "Demir", "Lefebvre", "Adeyemi",
)
AGENT_NAMES = (
    "Dana", "Marcus", "Elena", "Tobias", "Nina", "Raj", "Carla", "Jonas", "Linh", "Felix", "Sara", "Kenji",
    "Ayo", "Petra", "Luis", "Mira", "Owen", "Julia", "Arjun", "Bea",
)
EMAIL_DOMAINS = ("example.com", "example.net", "example.org", "mail.example.com", "inbox.example.net")

# ---------------------------------------------------------------- openings
USER_GREETING = {
    "forum": ("Hi all,", "Hello everyone,", "Hi,", "Hey folks,", "Hello,"),
    "chat": ("hi!", "hello!", "hey.", "hi there!", "good morning.", "hello?"),
    "ticket": ("Dear Support Team,", "Hello,", "To whom it may concern,", "Dear {brand} team,", "Hi,"),
}
AGENT_GREETING_CHAT = (
    "Hi, you're chatting with {agent}. How can I help you today?",
    "Thanks for contacting {brand}! My name is {agent}, what can I do for you?",
    "Hello and welcome to {brand} support. How can I help?",
    "Hi there! {agent} here from {brand}. What's going on?",
)
AGENT_GREETING_NAMED_ONLY = (
    "Hello and welcome to {brand} support. How can I help?",
    "Hi! What can I help you with today?",
)
CONTEXT = (
    "I've been using {product} for [a couple of years|a few months|ages] [without problems|and it was fine until now|with no issues].",
    "[We|I] rely on {product} [for work|every day|for the whole family].",
    "[Long time|Happy] {product} user here[, first time posting|].",
)
CONTEXT_ORDERS = (
    "I [ordered|bought] the {product} [last week|on the 2nd|a few days ago][ from your site|].",
    "I placed an order for the {product}[ recently|].",
)
TRIED = (
    "I already {past1}[ and {past2}|], [no luck|it didn't help|same thing].",
    "[Things|What] I tried: {past1}[, {past2}|]. Nothing [changed|worked].",
    "{past1_cap} didn't help[ either|].",
)
USER_QUESTION = (
    "Any ideas?", "Can someone help?", "What should I do?", "Is this a known issue?", "How do I fix this?",
    "Any help appreciated.", "Please advise.", "Has anyone seen this before?",
)
FORUM_SIGNOFF = ("Thanks in advance,\n{first}", "Cheers,\n{first}", "Thanks!", "TIA", "Thanks in advance!")
TICKET_SIGNOFF = ("Kind regards,\n{first} {last}", "Best regards,\n{first} {last}", "Sincerely,\n{first} {last}", "Thank you,\n{first}")

# ---------------------------------------------------------------- facts stated by the user
STATE = {
    "product": ("I'm using {prod}.", "This is [about|with] {prod}.", "It's {prod}[ by the way|]."),
    "product_telecom": ("I have the {prod}.", "My [router|modem|box] is the {prod}.", "The device is a {prod}."),
    "product_orders": ("The item is the {prod}.", "I ordered the {prod}.", "It's the {prod}."),
    "version": ("I'm on version {version}.", "Version {version}[, installed last week|].", "Running {version}.", "It says {version} in the About box."),
    "version_telecom": ("Firmware is {version}.", "The status page says firmware {version}.", "It's on firmware {version}."),
    "version_accounts": ("App version is {version}.", "I have version {version} of the app."),
    "option_software": ("This is on {os}.", "I'm running {os}.", "My [laptop|PC|computer] has {os}."),
    "option_plan": ("I'm on the {plan} plan.", "We have {plan}.", "My plan is {plan}."),
    "error_msg": ("The error says \"{msg}\".", "I get this: \"{msg}\"", "It pops up \"{msg}\".", "Message: \"{msg}\""),
    "error_code": ("It shows error {code}.", "Error code is {code}.", "I get error {code}[ every time|].", "The code is {code}."),
    "order_number": ("My order number is {order}.", "Order number {order}.", "The order is {order}."),
    "account_number": ("My account number is {account}.", "Account {account}."),
    "account_email": ("The account is under {email}.", "My login email is {email}."),
    "payment_method": ("I paid with my {payment}.", "Paid by {payment}."),
    "amount": ("The total was {amount}.", "It was {amount}."),
    "carrier": ("It was shipped with {carrier}.", "The carrier is {carrier}."),
}
VOLUNTEER = ("Oh and", "Also,", "Forgot to say:", "Btw,", "One more detail:")

# ---------------------------------------------------------------- agent questions and user answers
ASK = {
    "product": ("Which [product|app] is this about?", "Can you tell me which [app|program] this is?"),
    "product_telecom": ("Which modem or router model do you have?", "What model is the device? It's on the label underneath."),
    "product_orders": ("Which item is this about?", "Which product was it?"),
    "version": ("Which version are you on?", "What version is installed? [You can find it under Help > About.|]"),
    "version_telecom": ("What firmware is it running? [It's on the status page.|]", "Can you check the firmware version?"),
    "version_accounts": ("Which app version do you have?", "What version of the app is it?"),
    "option_software": ("Which operating system is this on?", "Are you on Windows or Mac, and which version?", "What OS?"),
    "option_plan": ("Which plan are you on?", "Can you confirm your plan?"),
    "error": ("Do you get an error message or code?", "Is there any error code shown?", "What does the error say exactly?"),
    "order_number": ("Could you [share|give me] the order number?", "What's the order number?"),
    "account_number": ("Can I have your account number?", "Could you confirm the account number?"),
    "account_email": ("What's the email address on the account?", "Which email is the account registered under?"),
    "payment_method": ("How did you pay for it?", "Which payment method did you use?"),
    "amount": ("How much was the charge?", "What amount was taken?"),
    "carrier": ("Which carrier shipped it?",),
}
ANSWER = {
    "product": ("{prod}", "it's {prod}", "{prod}[, sorry|]"),
    "version": ("{version}", "it says {version}", "version {version}", "{version} I think", "looks like {version}"),
    "option_software": ("{os}", "it's {os}", "on {os}"),
    "option_plan": ("{plan}", "the {plan} one", "I have {plan}"),
    "error_code": ("{code}", "it says {code}", "error {code}"),
    "error_msg": ("it says \"{msg}\"", "\"{msg}\"", "this: \"{msg}\""),
    "order_number": ("{order}", "sure, it's {order}", "order {order}"),
    "account_number": ("{account}", "it's {account}"),
    "account_email": ("{email}", "it's {email}"),
    "payment_method": ("{payment}", "my {payment}"),
    "amount": ("{amount}", "it was {amount}"),
    "carrier": ("{carrier}", "it was {carrier}"),
}
DONT_KNOW = {
    "version": ("not sure, how do I check?", "no idea, sorry", "whatever the latest is I guess", "I can't find it right now"),
    "option": ("not sure, it's whatever came with it", "I'd have to check, sorry", "no idea honestly"),
    "error": ("I didn't catch the code, it disappears too fast", "no code that I can see", "it doesn't really say anything"),
    "order_number": ("I can't find the confirmation email right now", "I don't have it handy, sorry"),
    "account_number": ("I don't have a bill in front of me", "not sure where to find that"),
    "account_email": ("I'd rather not share that here", "I have a few addresses, not sure which one"),
    "payment_method": ("I don't remember, sorry",),
    "amount": ("not sure exactly",),
    "carrier": ("no idea",),
}
AGENT_NO_MATTER = ("No problem, we can work without it.", "That's fine.", "OK, no worries.", "Alright, let's continue.")
CORRECTION = (
    "Sorry, correction: it's {right}, not {wrong}.",
    "Actually it's {right}, not {wrong}.",
    "Wait, I checked again: {right}, not {wrong}.",
    "Oops, I meant {right}[, not {wrong}|].",
    "My bad, it's {right}. I misread it as {wrong}.",
)
AGENT_ACK = (
    "Thanks.", "Thank you.", "Got it.", "Thanks for the details.", "Okay.", "Understood.", "Thanks for checking.",
    "Sorry to hear that.", "I see.",
)
AGENT_ACK_NAMED = ("Thanks, {first}.", "Thank you, {first}.", "Sorry about that, {first}.")

# ---------------------------------------------------------------- troubleshooting
SUGGEST_FAILED = (
    "Could you [try to|] {imp} [and see if that helps|first]?",
    "Let's [start with the basics|try something simple]: please {imp}.",
    "Can you {imp} and tell me if anything changes?",
)
FAILED_REPLY = (
    "[Tried that|Did that], [no change|still the same|didn't help].",
    "nope, same [problem|thing]",
    "Done, but it's still [happening|broken].",
    "That didn't [work|help] unfortunately.",
)
RESOLVE_INTRO = (
    "[Thanks|Thank you], that helps.", "OK, I think I know what's going on.", "Thanks for your patience.",
    "This looks like a known issue.", "Thanks for the details.", "",
)
STEPS_INTRO_LIST = ("Please [try|do] the following:", "Here's what [fixes|should fix] it:", "[Try|Follow] these steps:", "To fix it:")
STEP_FIRST = ("First, {s}.", "Let's start: please {s}.", "Could you {s}?", "Step one: {s}.", "[To begin|First thing], [please|can you] {s}[?|.]")
STEP_NEXT = ("[Great|Good|Perfect]. Now {s}.", "Next, {s}.", "OK, now please {s}.", "Thanks. Then {s}.", "[Alright|Nice|Cool], [next|now] [please|] {s}.")
STEP_ACK = ("ok done", "done", "ok", "done, what next?", "alright, did that", "ok it's doing it now", "okay", "one sec... done")
INLINE_STEPS_2 = (
    "Please {s1}, then {s2}.", "{s1_cap}, and after that {s2}.", "You'll need to {s1} and then {s2}.",
    "[What usually works:|The fix:|Try this:] {s1}, then {s2}.", "Could you {s1} and [afterwards|then] {s2}?",
    "[First|Start by making sure to] {s1}; [then|after that] {s2}.",
)
INLINE_STEPS_1 = (
    "Please {s1}.", "{s1_cap} and that should do it.", "The fix is to {s1}.", "[Try to|Could you] {s1}[ and let me know|]?",
    "[All you need to do is|What works is to] {s1}.", "[Go ahead and|Just] {s1}[, that should sort it|].",
)
INLINE_STEPS_3 = (
    "Please {s1}, then {s2}, and finally {s3}.", "{s1_cap}. Then {s2}. Finally, {s3}.",
    "[Three steps:|Here's the fix:|Do this:] {s1}; {s2}; [and then|finally] {s3}.",
    "Start by making sure to {s1}, [next|then] {s2}, and [at the end|last] {s3}.",
)
CAUSE_INTRO = (
    "", "[Basically|In short|So],", "[It looks like|It seems|Most likely]", "[Here's what's happening|What's going on here]:", "From what you describe,", "Based on [the error|those details|what you sent],",
    "[Looking at|Checking] [your account|the logs|the diagnostics],", "I've seen this [a few times|before|quite a bit lately]:",
)
CAUSE_OUTRO = (
    "", "", " [That explains it.|That's the whole story.|That's why it started.]",
    " [Annoying, I know.|Sorry about that.|Apologies for the hassle.]", " [It's not something you did.|Nothing you did wrong.]", " [We see this a lot|It's fairly common][ lately| with this setup|].",
    " [Good news is|Luckily] it's easy to fix.",
)
SYMPTOM_PREFIX = (
    "", "", "", "", "So basically ", "For some reason ", "Since [yesterday|last week|the weekend|this morning] ",
    "[Out of nowhere|Suddenly|All of a sudden] ", "[Weird one|Strange problem|Annoying issue]: ", "Not sure what changed but ",
)
SYMPTOM_SUFFIX = (
    "", "", "", "", ", and it's driving me [nuts|crazy]", ", which is [really|super] annoying", " [again|once more]",
    " [and I need it for work|and I have a deadline|and nothing I do helps]", ", [no idea why|not sure why]",
)
CONFIRM = {
    "chat": ("[that|it] worked!! thanks", "yes!! it works now", "[perfect|great], fixed. thank you", "ok that did it, thanks a lot", "it's working now, thanks"),
    "forum": (
        "That [did it|worked|fixed it]! Thanks a lot.",
        "Just tried it and the problem is gone. Marking this as solved.",
        "Confirmed, it's working again. Thanks for the quick help!",
    ),
    "ticket": (
        "I can confirm the issue is resolved. Thank you for your help.",
        "Thank you, the steps worked and everything is back to normal.",
        "This solved it. Please close the ticket.",
    ),
}
CONFIRM_SORTED = {
    "chat": ("great, thank you!", "perfect, thanks for sorting that", "ok thanks, that's all I needed", "awesome, thanks a lot"),
    "forum": ("Perfect, thanks for sorting this out.", "Great, that's exactly what I needed. Thanks!", "Got it, all sorted. Thank you."),
    "ticket": ("Thank you, that resolves my request.", "Thanks for the quick resolution.", "Understood, thank you for your help."),
}
CLOSING_AGENT = (
    "Glad I could help! Anything else I can do for you?",
    "Great to hear. Have a nice day!",
    "Happy to help. Take care!",
    "Perfect. I'll close this out then. Have a good one!",
)
CLOSING_USER = ("no that's all, bye", "that's it, thanks again", "all good, bye!", "nope, have a good day")
TICKET_AGENT_SIGN = ("Best regards,\n{agent}\n{brand} Support", "Kind regards,\n{agent} | Customer Support", "Regards,\nThe {brand} Support Team")
FORUM_AGENT_SIGN = ("{agent} ({brand} Support)", "- {agent}, {brand} team", "")
TICKET_REF = ("Your ticket number is {ticket}.", "I've logged this under ticket {ticket}.", "(Ticket {ticket})")
AGENT_HELLO_NAMED = {"forum": ("Hi {first},", "Hello {first},", "Hey {first},"), "ticket": ("Dear {first},", "Hello {first},")}
AGENT_HELLO = {"forum": ("Hi,", "Hello,", "Hi there,"), "ticket": ("Hello,", "Dear customer,")}
THANKS_OPEN = ("Thanks for reaching out.", "Thank you for contacting us.", "Thanks for the detailed post.", "Sorry for the trouble.", "")

# ---------------------------------------------------------------- unresolved endings
FOLLOW_UP_NO_REPLY = (
    "Just checking in: did the steps help?",
    "Hi again, any update on this?",
    "We haven't heard back, so I'll close this for now. Reply any time if it comes back.",
)
TRY_LATER = (
    "OK, I'll try that [tonight|tomorrow|when I'm home] and get back to you.",
    "Thanks, I'll give it a go later.",
    "ok will try later, gotta run",
)
TRY_LATER_AGENT = ("Sounds good, just reply here if it doesn't work.", "Sure, take your time.", "OK, talk soon.")
ESCALATE = (
    "I'm going to escalate this to our [tier 2|technical|specialist] team; they'll contact you [within 24 hours|by email|in the next few days].",
    "I can't fix this from here, so I've [raised|opened] a case with the [engineering|second-line] team.",
    "Let me pass this on to a specialist. Someone will [reach out|get back to you] [soon|within two business days].",
)
ESCALATE_REPLY = ("OK, thanks.", "Fine, I'll wait.", "ok... hope it's soon", "Alright, thank you.")

# ---------------------------------------------------------------- second issue, chatter, contact details
SECOND_INTRO = ("While I have you,", "One more thing:", "Also, [unrelated|different problem],", "Oh, and another issue:")
SECOND_CONFIRM = ("That worked too, thanks!", "Great, that one's sorted as well.", "ok that fixed it too")
CHATTER_USER = (
    "Sorry for the delay, [my kid needed me|the doorbell rang|I had to take a call].",
    "Btw your hold music is stuck in my head now.",
    "It's been raining all week here, perfect weather to fight with [computers|gadgets].",
    "I'm typing on my phone so excuse the formatting.",
    "Honestly I almost gave up and went for a walk.",
    "This is the third time this month something breaks, I swear.",
)
CHATTER_AGENT = ("No worries at all!", "Ha, I hear that a lot.", "Take your time.", "Totally understand.", "")
GIVE_EMAIL = ("You can reach me at {email}.", "My email is {email} if that helps.", "Please send anything to {email}.")
GIVE_PHONE = ("You can call me on {phone}.", "My number is {phone}.", "Phone: {phone}")
ASK_EMAIL = ("Could you give me an email address for the confirmation?", "What email should I send the summary to?")
GIVE_NAME = ("I'm {first}, by the way.", "This is {first} {last}.", "(name's {first})")
AGENT_STEP = ("I'll {s}.", "We'll {s}.", "Let me {s}.", "I'm going to {s}.", "I can {s}[ right away| today|].")
AGENT_STEP_LIST = ("I'll {s}.", "We'll {s}.", "{s_cap} (we'll handle this).", "{s_cap} (on our side).")
USER_STEP_SINGLE = ("Please {s}.", "{s_cap}.", "Could you {s}?", "You'll need to {s}.", "[Then|Also|And] {s}.", "[Make sure to|Be sure to] {s}.")
