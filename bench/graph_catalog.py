#!/usr/bin/env python3
"""graph_catalog.py -- a tool catalog shaped like the Microsoft 365 MCP
server's (Softeria/ms-365-mcp-server): tools generated from the Graph
OpenAPI description, each carrying the $defs of the microsoft.graph.*
types its body reaches. The types reference each other deeply (a message's
attachments hold items that hold messages; a notebook's section groups
hold sections whose pages point back at their notebook), and nullable
references are written as anyOf [ref, {nullable object}], so inlining
$ref for a dialect without it (gemini, vertex) multiplies the tools by
about ten: issue 27's held-out case (529 KB of tools, 5.29 MB inlined,
just past schema.max_growth).

usage: graph_catalog.py [TOOLS] [MODEL] > request.json
"""
import json
import sys

tools = int(sys.argv[1]) if len(sys.argv) > 1 else 60
model = sys.argv[2] if len(sys.argv) > 2 else "gemini-2.5-flash"


def ref(t):
    return {"$ref": "#/$defs/microsoft.graph.%s" % t}


def nullable(t):
    return {"anyOf": [ref(t), {"type": "object", "nullable": True}]}


S = {"type": "string"}
DT = {"type": "string", "format": "date-time"}
B = {"type": "boolean"}
I = {"type": "integer", "format": "int32"}

# type -> properties (names and shapes follow Graph's metadata)
TYPES = {
    "entity": {"id": S},
    "emailAddress": {"address": S, "name": S},
    "recipient": {"emailAddress": nullable("emailAddress")},
    "itemBody": {"content": S, "contentType": {"type": "string", "enum": ["text", "html"]}},
    "identity": {"displayName": S, "id": S},
    "identitySet": {"application": nullable("identity"), "device": nullable("identity"),
                    "user": nullable("identity")},
    "physicalAddress": {"city": S, "countryOrRegion": S, "postalCode": S, "state": S, "street": S},
    "outlookGeoCoordinates": {"accuracy": {"type": "number"}, "altitude": {"type": "number"},
                              "latitude": {"type": "number"}, "longitude": {"type": "number"}},
    "location": {"address": nullable("physicalAddress"), "coordinates": nullable("outlookGeoCoordinates"),
                 "displayName": S, "locationEmailAddress": S, "locationUri": S},
    "dateTimeTimeZone": {"dateTime": S, "timeZone": S},
    "attendee": {"emailAddress": nullable("emailAddress"), "proposedNewTime": nullable("timeSlot"),
                 "status": nullable("responseStatus"), "type": {"type": "string", "enum": ["required", "optional", "resource"]}},
    "timeSlot": {"end": nullable("dateTimeTimeZone"), "start": nullable("dateTimeTimeZone")},
    "responseStatus": {"response": S, "time": DT},
    "followupFlag": {"completedDateTime": nullable("dateTimeTimeZone"), "dueDateTime": nullable("dateTimeTimeZone"),
                     "flagStatus": S, "startDateTime": nullable("dateTimeTimeZone")},
    "internetMessageHeader": {"name": S, "value": S},
    "attachment": {"contentType": S, "isInline": B, "lastModifiedDateTime": DT, "name": S, "size": I,
                   "item": nullable("outlookItem")},
    "outlookItem": {"categories": {"type": "array", "items": S}, "changeKey": S, "createdDateTime": DT,
                    "lastModifiedDateTime": DT, "message": nullable("message"), "event": nullable("event")},
    "message": {"bccRecipients": {"type": "array", "items": ref("recipient")},
                "body": nullable("itemBody"), "ccRecipients": {"type": "array", "items": ref("recipient")},
                "flag": nullable("followupFlag"), "from": nullable("recipient"),
                "importance": {"type": "string", "enum": ["low", "normal", "high"]},
                "internetMessageHeaders": {"type": "array", "items": ref("internetMessageHeader")},
                "replyTo": {"type": "array", "items": ref("recipient")}, "sender": nullable("recipient"),
                "subject": S, "toRecipients": {"type": "array", "items": ref("recipient")},
                "attachments": {"type": "array", "items": ref("attachment")},
                "mentions": {"type": "array", "items": ref("mention")}},
    "mention": {"application": S, "createdBy": nullable("emailAddress"), "mentioned": nullable("emailAddress"),
                "mentionText": S, "serverCreatedDateTime": DT},
    "event": {"attendees": {"type": "array", "items": ref("attendee")}, "body": nullable("itemBody"),
              "end": nullable("dateTimeTimeZone"), "location": nullable("location"),
              "locations": {"type": "array", "items": ref("location")}, "organizer": nullable("recipient"),
              "start": nullable("dateTimeTimeZone"), "subject": S,
              "attachments": {"type": "array", "items": ref("attachment")}},
    "onenoteEntityBaseModel": {"self": S},
    "notebook": {"createdBy": nullable("identitySet"), "displayName": S, "isDefault": B,
                 "sectionGroups": {"type": "array", "items": ref("sectionGroup")},
                 "sections": {"type": "array", "items": ref("onenoteSection")}},
    "sectionGroup": {"displayName": S, "parentNotebook": nullable("notebook"),
                     "sections": {"type": "array", "items": ref("onenoteSection")},
                     "lastModifiedBy": nullable("identitySet")},
    "onenoteSection": {"displayName": S, "isDefault": B, "parentNotebook": nullable("notebook"),
                       "pages": {"type": "array", "items": ref("onenotePage")},
                       "lastModifiedBy": nullable("identitySet")},
    "onenotePage": {"content": S, "level": I, "order": I, "title": S,
                    "parentNotebook": nullable("notebook"), "parentSection": nullable("onenoteSection"),
                    "createdBy": nullable("identitySet")},
}
DESC = ("Represents a %s in Microsoft Graph. Properties follow the Graph metadata; "
        "values the service sets are ignored on create.")

LONG = {"emailAddress": " The address is an SMTP address; the name is the display name the "
                        "directory holds for it, or the one the sender gave when it is not in the directory.",
        "dateTimeTimeZone": " dateTime is a local time without offset (2026-12-06T05:30:00.0000000); "
                            "timeZone is a Windows or IANA time zone name, UTC when absent."}

ROOTS = [("send-mail", "message"), ("create-draft-email", "message"), ("update-mail-message", "message"),
         ("create-calendar-event", "event"), ("update-calendar-event", "event"),
         ("create-onenote-notebook", "notebook"), ("create-onenote-section", "onenoteSection"),
         ("create-onenote-page", "onenotePage"), ("create-section-group", "sectionGroup"),
         ("add-mail-attachment", "attachment")]


def reach(t, seen):
    if t in seen:
        return
    seen.add(t)
    s = json.dumps(TYPES[t])
    for other in TYPES:
        if '"#/$defs/microsoft.graph.%s"' % other in s:
            reach(other, seen)


def tool(i):
    name, root = ROOTS[i % len(ROOTS)]
    seen = set()
    reach(root, seen)
    defs = {"microsoft.graph.%s" % t: {"type": "object", "description": DESC % t + LONG.get(t, ""),
                                       "properties": TYPES[t]} for t in sorted(seen)}
    return {"type": "function", "function": {
        "name": "%s-%d" % (name, i // len(ROOTS)) if i >= len(ROOTS) else name,
        "description": "Microsoft Graph: %s (%s)." % (name.replace("-", " "), root),
        "parameters": {"type": "object", "$defs": defs,
                       "properties": {"body": ref(root), "user-id": S},
                       "required": ["body"]}}}


json.dump({"model": model, "messages": [{"role": "user", "content": "go"}],
           "tools": [tool(i) for i in range(tools)]}, sys.stdout)
